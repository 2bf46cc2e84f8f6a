"""``copy URL/NAME.tar DEST/ --unpack`` cancelled while it checks and names the members it unpacked: nothing
half-made stays below DEST. The check may need a second, clean pass over the finished archive (anything odd
while following it); a cancel then must end that pass too and remove its part files, as it does while the
archive still arrives."""

from __future__ import annotations

import os
import threading

import pytest

from backends.archive import follow
from backends.archive.pack import pack


def test_a_stop_during_the_clean_pass_ends_it_and_leaves_no_part_file(tmp_path, monkeypatch):
    src = tmp_path / "src" / "run"
    src.mkdir(parents=True)
    for i in range(30):
        (src / f"s{i:02d}.vcf").write_bytes(os.urandom(20_000 + i))
    dest = tmp_path / "dest"
    dest.mkdir()
    archive = dest / "run.tar"
    pack([str(src)], archive, workers_asked=1)

    follower = follow.Follower(archive)
    follower.whole.set()  # arrived already: the follower reads the finished archive
    follower.start()
    follower.thread.join(timeout=30)
    monkeypatch.setattr(follow.ArrivingArchive, "same_as_finished", lambda self: False)  # "a restart made another"
    made = []
    real_file = follow.Follower._file

    def file_then_cancel(self, member, data):
        real_file(self, member, data)
        made.append(member.name)
        if len(made) == 10:
            self.halt.set()  # what the engine does when the job is cancelled during "verifying"

    monkeypatch.setattr(follow.Follower, "_file", file_then_cancel)
    outcome: list[BaseException | None] = []

    def complete() -> None:
        try:
            follower.complete()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - the test looks at what ended it
            outcome.append(exc)

    worker = threading.Thread(target=complete)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the clean pass did not end on the cancel"
    assert isinstance(outcome[0], follow.Stopped), outcome
    assert len(made) == 10, f"the pass went on after the cancel: {len(made)} members"
    left = sorted(p.name for p in dest.rglob("*") if ".part" in p.name)
    assert not left, f"part files left below DEST: {left[:5]}"
    assert not (dest / "run" / "s00.vcf").exists()
    assert archive.exists()


def test_an_index_refused_at_the_end_leaves_no_part_file(tmp_path):
    """The members arrived and were written to part files; then the finished archive's index is refused (its
    lines are not Ferry's): the sentence says so and none of those part files stays below DEST."""
    import io
    import tarfile

    from backends.archive import index
    from backends.core.errors import Corrupt

    dest = tmp_path / "dest"
    dest.mkdir()
    archive = dest / "run.tar"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for i in range(5):
            info = tarfile.TarInfo(f"run/s{i}.vcf")
            info.size = 6
            tar.addfile(info, io.BytesIO(b"hello\n"))
        body = index.encode(['{"n": 5}\n'], buf.tell() + 512)
        info = tarfile.TarInfo(index.INDEX_NAME)
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    archive.write_bytes(buf.getvalue())
    follower = follow.Follower(archive)
    follower.whole.set()
    follower.start()
    with pytest.raises(Corrupt, match="index line 2 is not one Ferry writes"):
        follower.complete()
    left = sorted(p.name for p in dest.rglob("*") if ".part" in p.name)
    assert not left, f"part files left below DEST: {left}"
    assert archive.exists()


@pytest.fixture(autouse=True)
def _ferry_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABFERRY_HOME", str(tmp_path / "home"))
