""""Verified" is a promise: two uploads to one server name, from two machines a second apart.

Both wrote ``NAME.part``, the second making it anew under the first; both checked their own ranges, both said
"verified", and the server kept zeros. Each case here starts one upload (slowed by its own cap), waits until its
writing shows on the server, then starts a second from another Ferry installation (its own LABFERRY_HOME: another
machine, as far as the server can tell): the second is refused in one sentence naming the first, which ends with
its own bytes at the name, verified where the server can say so. Then the second, run again, replaces it.
"""

from __future__ import annotations

import json
import signal
import time

from tests.conformance.conftest import CASES, NOT_APPLICABLE, over
from tests.conformance.servers import signal_tree
from tests.integration.conftest import MiB, labferry, popen_labferry, write_random

CASES.update({
    "two_writers": "two uploads to one name from two machines, the same or other content: the second refused in a "
                   "sentence naming the first, the first's bytes at the name; run again, the second's",
})
NOT_APPLICABLE.update({
    ("two_writers", "https"): "n/a: HTTPS downloads only",
    ("two_writers", "torrent"): "n/a: BitTorrent fetches; serving is seeding",
})


def _writing_shows(target, name: str, proc, timeout: float = 60) -> None:
    """Wait until the first upload has something on the server beside the final name (its part or lock)."""
    deadline = time.monotonic() + timeout
    while not [p for p in target.root.iterdir() if p.name.startswith(name) and p.name != name]:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the first upload never showed on the server"
        time.sleep(0.02)


def _freeze_mover(target, first, at: int = 16 * MiB, timeout: float = 60) -> None:
    """SIGSTOP what the first Ferry started (globus-url-copy) once its part on the server holds ``at`` bytes."""
    part, deadline = target.path("shared.bam.part"), time.monotonic() + timeout
    while not (part.exists() and part.stat().st_size >= at):
        assert first.poll() is None and time.monotonic() < deadline, "the first upload never got under way"
        time.sleep(0.001)
    assert signal_tree(first.pid, signal.SIGSTOP, below=True) > 0


@over("sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
def test_two_writers(target, tmp_path, tmp_path_factory, record_property, monkeypatch):
    for content in ("same", "other"):
        _two_writers(target, tmp_path / content, tmp_path_factory, content, monkeypatch)
    record_property("how", "second refused naming the first, same and other content; run again, it replaced it")


def _cancel_as(target, local, url: str, home, monkeypatch) -> None:
    """Cancel the refused upload as the engine does (the backend's discard, with its installation's records): the
    part and lock the first upload holds must stay."""
    from app.requests import Overrides, resolve
    from app.store import Store
    from backends.core.base import TransferRequest
    from backends.core.registry import registry

    monkeypatch.setenv("LABFERRY_HOME", str(home))
    ssh = {"identity": str(target.server.key), "known_hosts": str(target.server.known_hosts)} \
        if target.name in ("sftp", "scp", "sftp-only") else {}
    ca = target.server.ca_file if target.name == "ftps" else None
    with Store() as store:
        request = resolve(str(local), url, Overrides(ca_file=ca, backend_options=ssh), store=store)
        state = str(store.path.parent)
    registry.for_url(url).discard(TransferRequest(request.source, request.dest, request.options, state_dir=state))
    monkeypatch.undo()


def _two_writers(target, tmp_path, tmp_path_factory, content: str, monkeypatch) -> None:
    first_home, second_home = tmp_path_factory.mktemp("machine-a"), tmp_path_factory.mktemp("machine-b")
    ours, theirs = tmp_path / "a" / "shared.bam", tmp_path / "b" / "shared.bam"
    ours.parent.mkdir(parents=True)
    theirs.parent.mkdir(parents=True)
    size = 12 * MiB if target.capped else 384 * MiB
    digest = write_random(ours, size, seed=901)
    other = digest if content == "same" else write_random(theirs, size, seed=902)
    if content == "same":
        theirs.write_bytes(ours.read_bytes())
    url = target.url("shared.bam")
    first = popen_labferry("copy", str(ours), url, *target.args(), "--limit-rate", "3M", "--json",
                           env_home=first_home)
    try:
        _writing_shows(target, "shared.bam", first)
        if not target.capped:  # globus-url-copy takes no cap: the first's data mover is frozen meanwhile instead
            _freeze_mover(target, first)
        else:  # frozen while the second tries and is cancelled: the first's part and lock are surely there
            signal_tree(first.pid, signal.SIGSTOP)
        try:
            second = labferry("copy", str(theirs), url, *target.args(), "--json", env_home=second_home, timeout=120)
            part = target.path("shared.bam.part")
            had = part.stat().st_size if part.exists() else None
            _cancel_as(target, theirs, url, second_home, monkeypatch)  # the refused job, cancelled in its queue
            assert target.path("shared.bam.ferry-lock").exists(), "a refused job's cancel removed the first's lock"
            assert (part.stat().st_size if part.exists() else None) == had, "it removed the first's part"
        finally:
            signal_tree(first.pid, signal.SIGCONT, below=not target.capped)
        assert second.returncode == 5, (second.returncode, second.stderr)
        sentence = second.stderr.strip().splitlines()[-1]
        assert "Another upload is writing" in sentence and "started" in sentence, sentence
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert target.digest("shared.bam") == digest == result["sha256"]
    assert "final name" in result["verify_method"], result
    assert not [p for p in target.root.iterdir() if p.name.startswith("shared.bam") and p.name != "shared.bam"]
    again = labferry("copy", str(theirs), url, *target.args(), "--overwrite", "--json", env_home=second_home,
                     timeout=120)
    assert again.returncode == 0, again.stderr
    assert target.digest("shared.bam") == other
    target.path("shared.bam").unlink()
