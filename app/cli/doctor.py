"""``labferry doctor``: what Ferry keeps for itself and whether it is sound, for a user whose history vanished
or an IT desk asked why a note said "damaged"."""

from __future__ import annotations

import argparse
import os
import stat

from app.units import format_bytes


def add_parser(sub) -> None:
    d = sub.add_parser("doctor", help="check Ferry's data folder and database; a damaged database is moved aside "
                                      "and a new one made; list what was kept aside")
    d.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from app.paths import data_dir, database_path
    from app.store import Store
    from app.store.health import kept_aside

    folder = data_dir()
    mode = stat.S_IMODE(os.stat(folder).st_mode)
    print(f"data folder  {folder} ({oct(mode)[2:]}{', yours alone' if not mode & 0o077 else ', OPEN TO OTHERS'})")
    path = database_path()
    with Store(path) as store:  # checked whole on opening: a damaged one is moved aside, said, and listed below
        jobs = store.conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
        history = store.conn.execute("SELECT count(*) FROM history").fetchone()[0]
    print(f"database     {path} ({format_bytes(path.stat().st_size)}): ok; {jobs} queued or kept jobs, "
          f"{history} history entries")
    aside = kept_aside(folder)
    if not aside:
        print("kept aside   none")
    for old in aside:
        print(f"kept aside   {old} ({format_bytes(old.stat().st_size)}): damaged, no longer read by Ferry; "
              "delete it once nothing in it is needed")
    return 0
