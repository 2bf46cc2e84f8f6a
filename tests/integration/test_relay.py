"""Store-and-forward through a DTN (``labferry copy SRC DEST --via site:dtn``): a real agent behind a real sshd,
its own data folder (the DTN's) apart from the laptop's, and a second sshd as the collaborator's server. Both
directions arrive byte-exact, the second hop starts before the first ends (cut-through), and a relay survives
the laptop's process and the agent being SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.conftest import MiB, labferry, sha256_of, write_random


def _args(dtn, *args: str) -> list[str]:
    return ["copy", *args, "--via", "site:dtn", "--agent-command", str(dtn.command), "--json"]


def _relay(dtn, *args: str, home: Path, timeout: float = 180) -> dict:
    proc = labferry(*_args(dtn, *args), env_home=home, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def _records(dtn) -> list[dict]:
    folder = dtn.home / "agent" / "relays"
    return [json.loads(p.read_text()) for p in folder.glob("*.json")] if folder.exists() else []


def _wait_record(dtn, test, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record in _records(dtn):
            if test(record):
                return record
        time.sleep(0.2)
    raise AssertionError(f"no relay record came to that state: {_records(dtn)}")


def _recorded_upload(dtn) -> int:
    """Bytes the agent's upload record (its ``uploads/*.json``) says the server has verified."""
    done = 0
    for path in (dtn.home / "uploads").glob("*.json"):
        try:
            done += sum(end - start for start, end in json.loads(path.read_text()).get("done", []))
        except (OSError, ValueError):
            continue  # being replaced this instant: read again at the next poll
    return done


def _agent_job(dtn, job: int) -> dict:
    from app.store import Store

    with Store(dtn.home / "ferry.sqlite3") as store:
        found = store.jobs.get(job)
        if found is None:  # ended and left the queue: its outcome is in the history
            row = store.conn.execute("SELECT outcome, bytes FROM history WHERE job_id=? ORDER BY id DESC",
                                     (job,)).fetchone()
            return {"bytes_done": row[1] if row else 0, "state": row[0] if row else "gone"}
    return {"bytes_done": found.bytes_done, "state": found.state.value}


def test_an_upload_relayed_through_the_agent_arrives_byte_exact_with_cut_through(dtn, collab, ferry_home, tmp_path):
    source = tmp_path / "reads.fastq"
    digest = write_random(source, 128 * MiB, seed=11)
    result = _relay(dtn, str(source), "site:collab/", "--limit-rate", "24M", home=ferry_home)
    assert result["ok"] and result["backend"] == "relay"
    assert sha256_of(collab / "reads.fastq") == digest and result["sha256"] == digest
    assert result["verified"] and "end to end through the relay" in result["verify_method"]
    assert len(result["hops"]) == 2 and all(h["seconds"] for h in result["hops"])
    record = _records(dtn)[0]
    # the agent had sent bytes on to the collaborator before the laptop's last byte arrived
    assert record["hop2_sent_before_hop1_ended"] > 0, record
    assert any(n.startswith("Cut-through") for n in result["notes"])
    assert record["state"] == "delivered" and not (dtn.home / "spool" / record["id"]).exists()
    from app.store import Store

    with Store() as store:  # history (and the reports made from it) shows both hops
        notes = json.loads(store.conn.execute("SELECT notes FROM history WHERE outcome='done'").fetchone()[0])
    assert [n[:6] for n in notes[:2]] == ["Hop 1:", "Hop 2:"] and " stream" in notes[0] and "Mbit/s" in notes[1]


def test_a_download_relayed_through_the_agent_arrives_byte_exact_with_cut_through(dtn, nginx, ferry_home, tmp_path):
    digest = write_random(nginx.data / "relay-down.bin", 128 * MiB, seed=12)
    result = _relay(dtn, nginx.url("relay-down.bin"), f"{tmp_path}/", "--ca-file", nginx.ca_file,
                    "--limit-rate", "24M", home=ferry_home)
    assert sha256_of(tmp_path / "relay-down.bin") == digest and result["sha256"] == digest
    assert result["verified"] and len(result["hops"]) == 2
    cut = [n for n in result["notes"] if n.startswith("Cut-through")]
    assert cut, result["notes"]  # this computer's hop began before the agent's first hop ended
    record = _records(dtn)[0]
    assert record["state"] == "delivered" and not (dtn.home / "spool" / record["id"]).exists()


def test_keep_leaves_the_relays_copy(dtn, collab, ferry_home, tmp_path):
    source = tmp_path / "kept.bam"
    digest = write_random(source, 8 * MiB, seed=13)
    result = _relay(dtn, str(source), "site:collab/", "--keep", home=ferry_home)
    assert sha256_of(collab / "kept.bam") == digest
    record = _records(dtn)[0]
    assert sha256_of(dtn.home / "spool" / record["id"] / "in" / "kept.bam") == digest
    assert any("stays on" in n for n in result["notes"])


def test_the_laptop_may_leave_once_the_first_hop_is_done(dtn, collab, ferry_home, tmp_path):
    from app.store import Store

    with Store(dtn.home / "ferry.sqlite3") as store:  # the DTN's own cap: its hop still runs when the laptop's ends
        store.settings.set("limit_rate", "4M")
    source = tmp_path / "leave.fastq"
    digest = write_random(source, 48 * MiB, seed=14)
    env = dict(os.environ, LABFERRY_HOME=str(ferry_home))
    proc = subprocess.Popen([sys.executable, "-m", "app", *_args(dtn, str(source), "site:collab/")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    record = _wait_record(dtn, lambda r: r["hop1"].get("last_at"), timeout=90)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _agent_job(dtn, record["job"])["state"] in ("running", "queued", "verifying")
    done = _wait_record(dtn, lambda r: r["state"] == "delivered", timeout=90)
    assert sha256_of(collab / "leave.fastq") == digest
    assert not (dtn.home / "spool" / done["id"]).exists()


def test_a_laptop_killed_mid_first_hop_resumes_when_the_command_runs_again(dtn, collab, ferry_home, tmp_path):
    source = tmp_path / "again.fastq"
    digest = write_random(source, 96 * MiB, seed=15)
    env = dict(os.environ, LABFERRY_HOME=str(ferry_home))
    argv = [sys.executable, "-m", "app", *_args(dtn, str(source), "site:collab/", "--limit-rate", "16M")]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = _wait_record(dtn, lambda r: r["hop1"].get("first_at"), timeout=90)  # ranges reached the agent
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    result = _relay(dtn, str(source), "site:collab/", home=ferry_home)
    assert sha256_of(collab / "again.fastq") == digest
    assert [r["id"] for r in _records(dtn)] == [first["id"]]  # the same relay, not a second one
    assert result["resumed_from"] > 0 or any("Resuming" in n for n in result["notes"]), result


def test_an_agent_killed_mid_relay_resumes_its_hop_without_sending_it_again(dtn, collab, ferry_home, tmp_path):
    from app.store import Store

    with Store(dtn.home / "ferry.sqlite3") as store:  # the DTN's own Settings: its hop is the slow one, and one
        store.settings.set("limit_rate", "4M")        # stream sends its leases in turn, so one is finished mid-hop
        store.settings.set("default_streams", "1")
    source = tmp_path / "agent-killed.fastq"
    digest = write_random(source, 64 * MiB, seed=16)
    env = dict(os.environ, LABFERRY_HOME=str(ferry_home))
    argv = [sys.executable, "-m", "app", *_args(dtn, str(source), "site:collab/")]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def mid_hop(record: dict) -> bool:  # a range the server verified is in the agent's upload record
        job = _agent_job(dtn, record["job"]) if record.get("job") else None
        return bool(job) and job["state"] == "running" and _recorded_upload(dtn) >= 32 * MiB

    # bytes sent are not yet bytes done: a range counts once the server has hashed it, so the kill waits for
    # the record (waiting for 32 MiB sent killed the agent before its first range was recorded, 2 runs in 3)
    record = _wait_record(dtn, mid_hop, timeout=90)
    done_before = _recorded_upload(dtn)  # what the killed agent had recorded, at least
    agent = dtn.agent_pid()
    os.kill(agent, signal.SIGKILL)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    assert dtn.agent_pid() not in (None, agent)  # the laptop's side reached a new agent, which resumed the hop
    assert sha256_of(collab / "agent-killed.fastq") == digest
    with Store(dtn.home / "ferry.sqlite3") as store:
        sent = store.conn.execute("SELECT bytes FROM benchmarks WHERE job_id=?", (record["job"],)).fetchall()
    # the restarted agent's run of the hop sent only what the killed one had not finished
    assert sent and sent[-1][0] <= 64 * MiB - done_before, (sent, done_before)
    assert json.loads(out.splitlines()[-1])["ok"]


def test_a_spool_without_room_refuses_before_anything_is_sent(dtn, collab, ferry_home, tmp_path):
    from app.store import Store

    with Store(dtn.home / "ferry.sqlite3") as store:
        store.settings.set("spool_keep_free", 1 << 60)  # a DTN that keeps an exabyte free: no room for anything
    source = tmp_path / "no-room.fastq"
    write_random(source, 4 * MiB, seed=17)
    proc = labferry(*_args(dtn, str(source), "site:collab/"), env_home=ferry_home)
    assert proc.returncode != 0
    assert json.loads(proc.stdout.splitlines()[-1])["state"] == "paused"  # waits for room; resume tries again
    assert "The relay's spool on" in proc.stderr and "Nothing was sent" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (collab / "no-room.fastq").exists() and not list(collab.iterdir())


def test_a_relay_through_a_site_that_is_not_ssh_is_refused(dtn, ferry_home, tmp_path, nginx):
    from app.sites import Site, SiteBook
    from app.store import Store

    with Store() as store:
        SiteBook(store).save(Site("web", "https", "127.0.0.1", nginx.port))
    source = tmp_path / "x.bin"
    write_random(source, MiB, seed=18)
    proc = labferry("copy", str(source), "sftp://elsewhere/x", "--via", "site:web", env_home=ferry_home)
    assert proc.returncode != 0 and "A relay goes through an SSH site's host" in proc.stderr


def test_the_preflight_measures_both_hops_and_says_whether_to_relay(dtn, collab, ferry_home):
    from app.sites import SiteBook
    from app.store import Store

    with Store(dtn.home / "ferry.sqlite3") as store:  # the same server, known here by the same name
        site = SiteBook(store).get("collab")
    with Store() as store:
        SiteBook(store).save(site)
    proc = labferry("preflight", "site:collab", "--via", "site:dtn", "--agent-command", str(dtn.command), "--quick",
                    "--max-streams", "2", "--json", env_home=ferry_home, timeout=180)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert {result[k]["host"] for k in ("direct", "first_hop", "second_hop")} == {"127.0.0.1"}
    assert all(result[k]["mbps"] > 0 for k in ("direct", "first_hop", "second_hop"))
    assert result["relay_mbps"] == min(result["first_hop"]["mbps"], result["second_hop"]["mbps"])
    assert result["why"].startswith(("Send it via site:dtn", "Copy directly")) and "Mbit/s" in result["why"]
    # the second hop was measured by the agent: the DTN's data folder holds its preflight, the laptop's two
    with Store(dtn.home / "ferry.sqlite3") as store:
        assert store.conn.execute("SELECT COUNT(*) FROM preflights").fetchone()[0] == 1
    assert "Relay" in proc.stdout and "Last mile" in proc.stdout


def test_cancelling_a_relayed_copy_stops_the_agents_hop_and_removes_its_spool(dtn, collab, ferry_home, tmp_path):
    from app.engine import Engine
    from app.requests import Overrides, resolve

    source = tmp_path / "cancelled.fastq"
    write_random(source, 48 * MiB, seed=19)
    request = resolve(str(source), "site:collab/", Overrides(via="site:dtn", agent_command=str(dtn.command),
                                                              limit_rate=12 * MiB))
    with Engine(run_queue=False, max_jobs=1) as engine:
        job = request.submit_to(engine).id
        record = _wait_record(dtn, lambda r: r["hop1"].get("first_at"), timeout=90)
        assert (dtn.home / "spool" / record["id"]).exists()
        engine.cancel(job)
        engine.wait(job, timeout=30)
    cancelled = _wait_record(dtn, lambda r: r["state"] == "cancelled", timeout=30)
    assert not (dtn.home / "spool" / cancelled["id"]).exists()
    assert _agent_job(dtn, cancelled["job"])["state"] == "cancelled"
    assert not (collab / "cancelled.fastq").exists()


def test_compressed_reads_are_relayed_compressed_on_both_hops(dtn, collab, ferry_home, tmp_path):
    """--compress reaches both SSH hops: the laptop's into the spool and the agent's on to the collaborator."""
    from tests.genomic import simulate

    reads = simulate(tmp_path / "reads", 40 * MiB, sam=False)
    source = tmp_path / "run7_R1.fastq"
    reads.fastq.rename(source)
    result = _relay(dtn, str(source), "site:collab/", "--compress", "zstd", home=ferry_home)
    assert sha256_of(collab / "run7_R1.fastq") == sha256_of(source) == result["sha256"] and result["verified"]
    assert result["bytes_on_wire"] < result["bytes"] / 2, result
    assert {n[:29] for n in result["notes"] if "Compressed on the wire" in n} == \
        {"Hop 1: Compressed on the wire", "Hop 2: Compressed on the wire"}, result["notes"]


def test_cancelling_the_agents_hop_on_the_agent_removes_the_spool_too(dtn, collab, ferry_home, tmp_path):
    """``labferry cancel --on site:dtn JOB`` (what the docs' ``queue --on`` shows): the hop stops and the spool
    on the DTN goes, as when the laptop cancels; it once stayed, 200 MiB of it."""
    source = tmp_path / "cancelled-there.fastq"
    write_random(source, 48 * MiB, seed=23)
    proc = subprocess.Popen([sys.executable, "-m", "app", *_args(dtn, str(source), "site:collab/"),
                             "--limit-rate", "12M"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, LABFERRY_HOME=str(ferry_home)))
    try:
        record = _wait_record(dtn, lambda r: r["hop1"].get("first_at") and r.get("job"), timeout=90)
        assert (dtn.home / "spool" / record["id"]).exists()
        cancel = labferry("cancel", str(record["job"]), "--on", "site:dtn", "--agent-command", str(dtn.command),
                          env_home=ferry_home)
        assert cancel.returncode == 0, cancel.stderr
        cancelled = _wait_record(dtn, lambda r: r["id"] == record["id"] and r["state"] == "cancelled", timeout=30)
        assert not (dtn.home / "spool" / cancelled["id"]).exists()
    finally:
        proc.kill()
        proc.communicate()
    assert not (collab / "cancelled-there.fastq").exists()
