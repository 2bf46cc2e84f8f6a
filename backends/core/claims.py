"""Who holds a remote part file: the owner record an upload leaves beside ``NAME.part`` on a server, and the one
sentence a second writer reads. Each protocol claims it its own way (SFTP's exclusive create, FTP's ``MKD``,
both atomic on the server); what the record says and how the refusal reads is the same everywhere."""

from __future__ import annotations

import getpass
import json
import os
import secrets
import socket
import time

from .errors import Corrupt, PartTaken

LOCK_SUFFIX = ".ferry-lock"
#: the owner record's name inside a lock that is a folder (FTP and GridFTP, whose atomic claim is ``MKD``)
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


def read_owner(data: bytes) -> dict:
    """An owner record as read from the server; one that is not Ferry's JSON names nobody (``job`` None)."""
    try:
        owner = json.loads(data[:OWNER_BYTES])
    except ValueError:
        return {"job": None}
    return owner if isinstance(owner, dict) else {"job": None}


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
