"""Two identical `labferry copy` commands started together (a double click, a script run twice) against nginx.

Seen as a new user would: the loser removed the winner's ``NAME.part`` as if it were its own, the winner ended
with an internal error, and both reported the same job id. Now one of them copies the file byte-exact and the
other either says, in one sentence, that the copy runs elsewhere (exit 5) or finds it done and copies again
nothing wrong; no traceback, and every history row has its own job id.
"""

from __future__ import annotations

import json
import time

from app.store import Store

from .conftest import popen_labferry, sha256_of


def test_two_identical_copies_started_together_never_break_the_file(nginx, big_file, tmp_path, ferry_home):
    dest = tmp_path / "big.bin"
    for round_ in range(3):
        dest.unlink(missing_ok=True)
        args = ("copy", nginx.url("big.bin"), str(dest), "--ca-file", nginx.ca_file, "--json",
                "--limit-rate", "100M")
        procs = [popen_labferry(*args, env_home=ferry_home) for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        codes = [p.returncode for p in procs]
        stderr = "\n".join(err for _, err in outs)
        assert "internal error" not in stderr and "Traceback" not in stderr, stderr
        assert 0 in codes, stderr
        for code, (out, err) in zip(codes, outs, strict=True):
            if code != 0:
                assert code == 5, err
                assert "already being transferred by another Ferry process" in err, err
                assert json.loads(out.strip().splitlines()[-1])["ok"] is False if out.strip() else True
        assert sha256_of(dest) == big_file.sha256, f"round {round_}: {stderr}"
        assert not dest.with_name("big.bin.part").exists()
        time.sleep(0.2)
    with Store() as store:
        ids = [row["job_id"] for row in store.history.query()]
        assert len(ids) == len(set(ids)), ids
