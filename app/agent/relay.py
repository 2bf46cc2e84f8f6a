"""The agent's half of a relay (``labferry copy SRC DEST --via site:NAME``): store-and-forward with cut-through.

Each relay has a spool folder ``LABFERRY_HOME/spool/ID`` on the agent's host and a record
``LABFERRY_HOME/agent/relays/ID.json``. ID comes from what the laptop copies (its file's path, size and mtime,
and the far end), so running the same command again finds the same relay and resumes it.

* **Upload** (laptop → agent → DEST). The agent makes ``in/NAME.part`` of the file's size and a hard link to
  it, ``out/NAME``. The laptop uploads into ``in/NAME`` with its own streams and tells the agent each range
  its upload verified on this disk (``relay_ranges``); the agent writes them into ``arrivals.json``. The
  second hop is an ordinary job of the agent's engine, ``out/NAME`` → DEST, whose options name that file: it
  sends ranges as they arrive, so both hops run at once. When the laptop's hop ends it gives the original's
  SHA-256 (``relay_arrived``), against which the destination is checked. The spool goes once DEST is verified.
* **Download** (SRC → agent → laptop). The first hop is the agent's job SRC → ``in/NAME``; its resume record
  (the part file's ``.ferry``) says which ranges are written, and ``out/NAME`` is a hard link to the part
  file, so its name survives the job's final rename. The laptop reads ``out/NAME`` with SSH streams, only
  ranges the agent reports ready (``relay_status``), and checks the whole against the first hop's SHA-256,
  then says so (``relay_done``) and the spool goes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

from backends.core.base import ForwardsArriving
from backends.core.errors import BadRequest, NoSpace, NotFound
from backends.core.registry import registry
from backends.core.words import human_size
from backends.destination import STATE_SUFFIX, open_new, portable_name, write_atomic
from backends.streams.arriving import read_arrivals, write_arrivals
from backends.streams.chunks import merge

from .protocol import job_dict

#: free space the spool leaves on its disk, whatever a relay needs (a DTN's disk also holds others' data)
KEEP_FREE = 1 << 30
#: a delivered relay's record is kept this long (what ``relay_status`` and a re-run find), then forgotten
FORGET_DAYS = 7


def relay_id(request: dict) -> str:
    """A relay's ID: its direction, this computer's file and the far end (the same command, the same relay)."""
    key = json.dumps([request["direction"], request["key"], request["far"]])
    return hashlib.sha256(key.encode()).hexdigest()[:16]


class Relays:
    def __init__(self, folder: Path, engine) -> None:
        self.spool = folder / "spool"
        self.records = folder / "agent" / "relays"
        self.engine = engine
        self.lock = threading.RLock()

    # -- records ------------------------------------------------------------------------------
    def _record(self, ident: str) -> dict:
        try:
            return json.loads((self.records / f"{ident}.json").read_text())
        except (OSError, ValueError):
            raise NotFound(f"The agent has no relay {ident}; start the relayed copy again.") from None

    def _save(self, record: dict) -> None:
        self.records.mkdir(parents=True, exist_ok=True)
        write_atomic(self.records / f"{record['id']}.json", json.dumps(record).encode())

    def _folder(self, record: dict) -> Path:
        return self.spool / record["id"]

    def _job(self, record: dict) -> dict | None:
        """The relay's job on this agent: live from the engine; once it ended, as the record kept it; and for a
        job that ended just before this agent was killed (its queue no longer holds it), from the history."""
        if record.get("job") is None:
            return None
        if record.get("job_ended"):
            return record["job_ended"]
        try:
            job = job_dict(self.engine.job(record["job"]))
        except Exception:  # not in the queue any more: it ended under an agent that was killed
            job = self._ended_job(record)
        if job and job["state"] in ("done", "failed", "cancelled") and (job["state"] != "done" or job.get("result")):
            record["job_ended"] = job
            self._save(record)
        return job

    def _ended_job(self, record: dict) -> dict | None:
        from app.store import Store

        with Store() as store:
            row = store.conn.execute(
                "SELECT outcome, bytes, seconds, throughput_mbps, streams, sha256, verified, verify_method, peer_host,"
                " error, error_kind, finished FROM history WHERE job_id=? AND started>=? ORDER BY id DESC",
                (record["job"], record["created"])).fetchone()
        if row is None:
            return None
        result = None
        if row["outcome"] == "done":
            result = {k: row[k] for k in ("bytes", "seconds", "throughput_mbps", "streams", "sha256", "verify_method",
                                          "peer_host", "finished")} | {"verified": bool(row["verified"])}
        return {"id": record["job"], "state": row["outcome"], "bytes_done": row["bytes"] or 0, "streams": 0,
                "error": row["error"], "error_kind": row["error_kind"], "result": result}

    def _room(self, size: int) -> None:
        """Room for the whole file before its first byte: a spool that fills mid-way would stall both hops."""
        from app.store import Store

        with Store() as store:
            keep_free = int(store.settings.get("spool_keep_free") or KEEP_FREE)
        self.spool.mkdir(parents=True, exist_ok=True)
        usage = shutil.disk_usage(self.spool)
        if usage.free - keep_free < size:
            raise NoSpace(
                f"The relay's spool on {socket.gethostname()} ({self.spool}) has {human_size(max(0, usage.free))} "
                f"free and keeps {human_size(keep_free)} of it for others (setting spool_keep_free); the file needs "
                f"{human_size(size)}. Free space there, or copy directly without --via. Nothing was sent.")

    # -- requests from the laptop -----------------------------------------------------------------
    def open(self, request: dict) -> dict:
        """A new relay, or the one the same command made before (resumed)."""
        from app.requests import overrides_from_wire, resolve_here

        direction = request["direction"]
        if direction not in ("up", "down"):
            raise BadRequest(f"A relay goes up or down, not '{direction}'.")
        name = Path(str(request["name"]).replace("\\", "/")).name
        if not name or name in (".", ".."):
            raise BadRequest("The relayed file needs a name.")
        name = portable_name(name)[0]  # the spool is a destination like any other: a name every OS accepts
        ident = relay_id(request)
        with self.lock:
            path = self.records / f"{ident}.json"
            if path.exists():
                if self._record(ident)["state"] not in ("delivered", "cancelled"):
                    return self.status({"relay": ident})  # the same command again: resume it
                path.unlink()  # delivered before: this is a new copy of the same file, sent again in full
            folder = self.spool / ident
            shutil.rmtree(folder, ignore_errors=True)
            (folder / "in").mkdir(parents=True, exist_ok=True)
            (folder / "out").mkdir(exist_ok=True)
            overrides = overrides_from_wire(request.get("overrides"))
            record = {"id": ident, "direction": direction, "name": name, "far": request["far"],
                      "keep": bool(request.get("keep")), "created": time.time(), "state": "relaying", "hop1": {}}
            if direction == "up":
                size, mode, mtime = int(request["size"]), int(request.get("mode") or 0o644), float(request["mtime"])
                self._room(size)
                part = folder / "in" / f"{name}.part"
                fd = open_new(part, os.O_WRONLY | os.O_TRUNC)  # through no link, as every write below a destination
                try:
                    os.ftruncate(fd, size)
                finally:
                    os.close(fd)
                os.link(part, folder / "out" / name)
                arrivals = folder / "arrivals.json"
                write_arrivals(arrivals, size=size, mode=mode, mtime=mtime, ready=[])
                source, dest = str(folder / "out" / name), request["far"]
                record |= {"size": size, "mode": mode, "mtime": mtime, "arrivals": str(arrivals)}
            else:
                source, dest = request["far"], str(folder / "in" / name)
                record |= {"mtime": record["created"]}
            # the user's SSH options (--compress) reach the far hop when it is SSH, and are left out otherwise
            resolved = resolve_here(source, dest, overrides, strict=False)
            record["job"] = None
            if direction == "down" or isinstance(registry.get(resolved.backend), ForwardsArriving):
                record["job"] = self._submit(resolved, record)
            else:  # this backend cannot send a file still arriving: the second hop waits for the whole file
                record["pending"] = {"source": source, "dest": dest, "overrides": request.get("overrides") or {}}
            self._save(record)
            return self.status({"relay": ident})

    def _submit(self, resolved, record: dict) -> int:
        if record["direction"] == "up":
            resolved = replace(resolved, options=replace(resolved.options, arriving=record["arrivals"]))
        return self.engine.submit(*resolved.submit_args()).id

    def ranges(self, request: dict) -> dict:
        """The laptop's upload verified these ranges on this disk: ready to send on."""
        with self.lock:
            record = self._record(request["relay"])
            arrivals = read_arrivals(record["arrivals"])
            size = record["size"]
            told = [(max(0, int(s)), min(size, int(e))) for s, e in request.get("done", [])]
            ready = merge([tuple(r) for r in arrivals["ready"]] + told)
            if ready != [tuple(r) for r in arrivals["ready"]]:
                write_arrivals(record["arrivals"], size=size, mode=record["mode"], mtime=record["mtime"],
                               ready=ready, sha256=arrivals.get("sha256"))
                if not record["hop1"].get("first_at"):
                    record["hop1"]["first_at"] = time.time()
                    self._save(record)
            return {"ready": sum(e - s for s, e in ready)}

    def arrived(self, request: dict) -> dict:
        """The laptop's hop is done and verified: every byte is here; the original's SHA-256 checks the rest."""
        with self.lock:
            record = self._record(request["relay"])
            digest = str(request["sha256"])
            if len(digest) != 64:
                raise BadRequest("The relay needs the original's SHA-256 (64 hex digits).")
            write_arrivals(record["arrivals"], size=record["size"], mode=record["mode"], mtime=record["mtime"],
                           ready=[(0, record["size"])], sha256=digest)
            record["hop1"] |= {k: request[k] for k in ("seconds", "streams", "rate", "route") if k in request}
            record["hop1"]["last_at"] = time.time()
            if record.get("pending"):  # store-and-forward: the far backend takes only whole files
                from app.requests import overrides_from_wire, resolve_here

                pending = record.pop("pending")
                resolved = resolve_here(pending["source"], pending["dest"], overrides_from_wire(pending["overrides"]),
                                        strict=False)
                record["job"] = self._submit(resolved, record)
            job = self._job(record)
            # cut-through, shown: what the second hop had sent on when the first one's last byte arrived
            record["hop2_sent_before_hop1_ended"] = job["bytes_done"] if job else 0
            record["sha256"] = digest
            self._save(record)
            return self.status({"relay": record["id"]})

    def status(self, request: dict) -> dict:
        with self.lock:
            record = self._record(request["relay"])
            folder = self._folder(record)
            job = self._job(record)
            answer = {"relay": record["id"], "direction": record["direction"], "state": record["state"],
                      "spool": str(folder / "in" / record["name"]), "out": str(folder / "out" / record["name"]),
                      "job": job, "hop1": record["hop1"], "keep": record["keep"], "sha256": record.get("sha256"),
                      "hop2_sent_before_hop1_ended": record.get("hop2_sent_before_hop1_ended")}
            if record["direction"] == "up" and record["state"] == "relaying" and job and job["state"] == "done" \
                    and job.get("result"):
                self._deliver(record)  # the destination verified it: the spool goes now, not at the next tend
                answer["state"] = record["state"]
            if record["direction"] == "up":
                arrivals = read_arrivals(record["arrivals"]) if Path(record["arrivals"]).exists() else {}
                answer |= {"size": record["size"], "ready": arrivals.get("ready", [])}
            else:
                answer |= self._download_state(record, folder, job)
                answer["mtime"] = record["mtime"]
            return answer

    def done(self, request: dict) -> dict:
        """The laptop verified its copy (download): the spool goes, unless the relay keeps it."""
        with self.lock:
            record = self._record(request["relay"])
            if request.get("sha256") != record.get("sha256"):
                raise BadRequest("The laptop's SHA-256 is not the first hop's; the spool stays for another try.")
            self._deliver(record)
            return self.status({"relay": record["id"]})

    def cancel(self, request: dict) -> dict:
        """The laptop cancelled the relayed job: its hop here stops and the spool goes."""
        ident = relay_id(request)
        with self.lock:
            try:
                record = self._record(ident)
            except NotFound:
                return {"relay": ident, "state": "unknown"}
            job = self._job(record)
            if job and job["state"] not in ("done", "failed", "cancelled"):
                self.engine.cancel(record["job"])
            self._cancelled(record)
            return {"relay": ident, "state": "cancelled"}

    # -- housekeeping (each second, from the agent's loop thread pool) ----------------------------------
    def tend(self) -> None:
        """Upload relays whose destination is verified lose their spool; a relay whose hop here was cancelled on
        the agent (``labferry cancel --on``, the Agents tab) loses its spool at once, as one cancelled from the
        laptop does; records of relays delivered more than ``FORGET_DAYS`` ago go."""
        if not self.records.exists():
            return
        with self.lock:
            for path in self.records.glob("*.json"):
                try:
                    record = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue
                ended = record.get("delivered_at", 0)
                if record["state"] in ("delivered", "cancelled") and time.time() - ended > FORGET_DAYS * 86400:
                    path.unlink(missing_ok=True)
                    continue
                if record["state"] != "relaying":
                    continue
                job = self._job(record)
                if job and job["state"] == "cancelled":
                    self._cancelled(record)
                elif record["direction"] == "up" and job and job["state"] == "done" and job.get("result"):
                    self._deliver(record)

    def _cancelled(self, record: dict) -> None:
        shutil.rmtree(self._folder(record), ignore_errors=True)
        record["state"] = "cancelled"
        record["delivered_at"] = time.time()  # forgotten after FORGET_DAYS like a delivered one
        self._save(record)

    def _deliver(self, record: dict) -> None:
        record["state"] = "delivered"
        record["delivered_at"] = time.time()
        if not record["keep"]:
            shutil.rmtree(self._folder(record), ignore_errors=True)
        self._save(record)

    def _download_state(self, record: dict, folder: Path, job: dict | None) -> dict:
        """What of a download relay's first hop is on this disk: its part file's resume record, read here; the
        stable name ``out/NAME`` linked to the part file as soon as there is one."""
        name = record["name"]
        final, part = folder / "in" / name, folder / "in" / f"{name}.part"
        out = folder / "out" / name
        state = {"size": None, "ready": [], "sha256": None, "failed": None}
        if job is None:
            state["failed"] = "The relay's first hop was removed from the agent's queue; start the copy again."
            return state
        if job["state"] in ("failed", "cancelled"):
            state["failed"] = f"The relay's first hop {job['state']}: {job.get('error') or 'cancelled on the agent'}"
            return state
        if job["state"] == "done" and job.get("result"):
            self._link(final, out)
            size = job["result"]["bytes"]
            record["sha256"] = job["result"]["sha256"]
            self._save(record)
            return state | {"size": size, "ready": [(0, size)], "sha256": record["sha256"], "linked": True}
        try:
            saved = json.loads(part.with_name(part.name + STATE_SUFFIX).read_text())
        except (OSError, ValueError):
            return state
        if saved.get("size") is None or not part.exists():
            return state
        self._link(part, out)
        return state | {"size": saved["size"], "ready": merge([tuple(r) for r in saved.get("done", [])]),
                        "linked": True}

    @staticmethod
    def _link(target: Path, out: Path) -> None:
        """``out`` is ``target``'s inode (made again if the first hop began its file anew)."""
        try:
            if out.exists() and os.stat(out).st_ino == os.stat(target).st_ino:
                return
            tmp = out.with_name(out.name + ".new")
            tmp.unlink(missing_ok=True)
            os.link(target, tmp)
            os.replace(tmp, out)
        except FileNotFoundError:
            pass
