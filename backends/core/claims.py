"""Who holds a remote part file: the owner record an upload leaves beside ``NAME.part`` on a server, and the one
sentence a second writer reads. Each protocol claims it its own way (SFTP's exclusive create, FTP's ``MKD``,
both atomic on the server); what the record says and how the refusal reads is the same everywhere."""

from __future__ import annotations

import getpass
import json
import os
import re
import secrets
import socket
import time

from .errors import Corrupt, PartTaken

LOCK_SUFFIX = ".ferry-lock"
#: the owner record's file inside a lock that is a folder (GridFTP's, whose atomic claim is ``MKD``; FTP's lock holds
#: the record as a sub-folder's name instead, ``owner_name``)
OWNER_FILE = "owner"
#: the most of an owner record read: it is a line of JSON
OWNER_BYTES = 4096


def new_token() -> str:
    """This installation's name for one upload, kept in its resume record: the same command again is the owner."""
    return secrets.token_hex(12)


def owner_record(token: str) -> bytes:
    try:
        user = getpass.getuser()
    except Exception:
        user = "?"
    return json.dumps({"job": token, "host": socket.gethostname(), "user": user, "pid": os.getpid(),
                       "started": int(time.time())}).encode()


#: the start of an owner record written as a folder's name inside an FTP lock (``owner_name``)
OWNER_PREFIX = "owner~"


def owner_name(token: str) -> str:
    """The owner record as a name (``owner~TOKEN~USER~HOST~PID~STARTED``): an FTP lock holds it as a sub-folder,
    made with one ``MKD`` where a file would cost a data connection (three round trips more per uploaded file)."""
    owner = json.loads(owner_record(token))
    fields = [str(owner[key]) for key in ("job", "user", "host", "pid", "started")]
    return OWNER_PREFIX + "~".join(re.sub(r"[^A-Za-z0-9._-]", "_", field)[:64] for field in fields)


def read_owner_name(name: str) -> dict | None:
    """An owner record read from a name ``owner_name`` made; None for a name that is not one."""
    if not name.startswith(OWNER_PREFIX):
        return None
    fields = name[len(OWNER_PREFIX):].split("~")
    if len(fields) != 5:
        return {"job": None}
    job, user, host, pid, started = fields
    return {"job": job, "user": user, "host": host, "pid": pid,
            "started": int(started) if started.isdigit() else None}


def read_owner(data: bytes) -> dict:
    """An owner record as read from the server; one that is not Ferry's JSON names nobody (``job`` None)."""
    try:
        owner = json.loads(data[:OWNER_BYTES])
    except ValueError:
        return {"job": None}
    return owner if isinstance(owner, dict) else {"job": None}


def ours_to_remove(owner: dict | None, token: str | None) -> bool:
    """Whether a cancelled upload may remove ``NAME.part`` and its lock: no lock there (``owner`` None), or one
    this installation's upload holds. A part another upload holds is never removed by someone else's cancel."""
    return owner is None or (bool(token) and owner.get("job") == token)


def taken(remote: str, where: str, owner: dict, lock: str) -> PartTaken:
    """The sentence for a second writer (exit 5)."""
    started = owner.get("started")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if isinstance(started, int) else "an unknown time"
    who = (f"Ferry of {owner.get('user', '?')} on {owner.get('host', '?')} (process {owner.get('pid', '?')}, started "
           f"{when})")
    return PartTaken(f"Another upload is writing {remote} on {where}: {who} holds {lock}. Wait for it to end; if "
                     f"that upload is gone for good, remove {lock} on the server and run this again.")


def replaced(remote: str, where: str, found: str) -> Corrupt:
    """The sentence for an upload whose final name, checked after the rename, holds another file (exit 6); ``found``
    says what was found there instead, in a few words."""
    return Corrupt(f"{remote} on {where} is not the file this upload wrote ({found}): another program or a second "
                   "upload replaced it after Ferry's rename. Check who else writes there, then run the same command "
                   "again.")
