"""``labferry copy SRC DEST``: one transfer, with a progress line, resumable with the same command."""

from __future__ import annotations

import argparse
import getpass
import json
import queue
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from app import stops as stopping
from app.cli.flags import add_option_flags, options_from_flags
from app.cli.progress import ProgressLine
from app.requests import Overrides, parse_streams
from app.units import counted, format_bytes, format_duration, format_rate, parse_duration, parse_rate, parse_schedule
from backends.core.checksums import parse_checksum
from backends.core.errors import BadRequest

if TYPE_CHECKING:  # the engine is imported when a copy runs, not to parse a command line (start-up counts)
    from app.engine import Engine, RetryPolicy


def add_parser(sub) -> None:
    p = sub.add_parser(
        "copy",
        help="copy a file or folder: download (https://, http://, sftp://, scp://, ftp://, gsiftp://, sshftp://, "
             "a .torrent or magnet: link, every file of an ENA/SRA accession), upload (to sftp://, scp://, ftp://, "
             "gsiftp://) or server to server "
             "(GridFTP)",
        description="Copy SRC to DEST. Either side may be site:NAME/path (a saved site profile). Run the same "
                    "command again to resume an interrupted copy.",
    )
    p.add_argument("source", metavar="SRC", nargs="?",
                   help="a URL (https://data.example.org/run1.bam, sftp://user@host/data/run1/, "
                        "gsiftp://dtn/data/run1.tar), a .torrent file or magnet: link, ena:ACCESSION (a run, "
                        "sample, study or project: every file, MD5-checked, with a samplesheet), site:NAME/path, or a "
                        "local path to upload")
    p.add_argument("dest", metavar="DEST", nargs="?",
                   help="a local file or folder, or an sftp://, scp://, ftp://, gsiftp:// address or site:NAME/path "
                        "to upload to")
    p.add_argument("--streams", default=None, metavar="N|auto",
                   help="parallel streams: a number (1-64), or auto (default) to add streams while they help")
    p.add_argument("--checksum", metavar="ALG:HEX", help="expected checksum, e.g. sha256:ab12…, verified at the end")
    p.add_argument("--limit-rate", metavar="RATE", help="cap the rate: 50M (MiB/s), 800K, or bits like 400Mbit")
    p.add_argument("--bwlimit", metavar="SCHEDULE",
                   help="a cap that follows the clock, as rclone's: '08:00,10M 18:00,off' (local time; RATE as for "
                        "--limit-rate, or off); a running transfer follows each change. Replaces Settings' schedule")
    p.add_argument("--ca-file", metavar="PEM", help="trust this certificate authority (a lab's own CA)")
    p.add_argument("--no-verify", action="store_true",
                   help="do not compare with the server's checksum (Ferry still records its own sha256)")
    p.add_argument("--insecure", action="store_true", help="do not verify TLS certificates (only on a trusted network)")
    p.add_argument("--overwrite", action="store_true", help="replace DEST if it exists")
    p.add_argument("--pack", action="store_true",
                   help="send the folder SRC as one tar (DEST/NAME.tar), made as it is sent: never written here")
    p.add_argument("--unpack", action="store_true",
                   help="SRC is a .tar or .tar.zst on a server: unpack it into the folder DEST as it arrives, check "
                        "every member against its index, then remove the archive")
    p.add_argument("--backend", metavar="NAME",
                   help="use this backend for the address (gridftp for a GridFTP server reached over ftp://, for "
                        "its parallel streams, server checksums and server-to-server copies)")
    p.add_argument("--sync", nargs="?", const="size-mtime", choices=("size-mtime", "checksum"),
                   help="skip files already at DEST with the same size and time (or checksum); for folders")
    _protocol_and_job_flags(p)
    p.set_defaults(handler=run)


def _protocol_and_job_flags(p: argparse.ArgumentParser) -> None:
    """Each protocol's own flags (from its declared options), an accession's, and how the job runs: depth,
    retries, waiting for the network, output, the DTN agent (``--on``) and the relay (``--via``)."""
    add_ssh_arguments(p)
    from .torrent import add_torrent_arguments

    add_torrent_arguments(p)
    from backends.https.options import HttpsOptions

    add_option_flags(p.add_argument_group("HTTP(S)"), HttpsOptions)
    from backends.gridftp.options import GridftpOptions

    add_option_flags(p.add_argument_group("GridFTP (gsiftp://, sshftp://)"), GridftpOptions)
    from .accession import add_arguments as add_accession_arguments

    add_accession_arguments(p)
    p.add_argument("--max-depth", type=_max_depth, default=None, metavar="N",
                   help="for folders: go at most N folder levels below the source (default 32, at most 64); a deeper "
                        "tree is refused before anything is copied")
    p.add_argument("--retries", type=_retries, default=None, metavar="N",
                   help="tries after a network fault before giving up (default 5; 0: fail at the first fault)")
    p.add_argument("--wait-network", type=_duration, default=None, metavar="DURATION",
                   help="when the server is out of reach mid-transfer (a closed lid, a lost VPN, the server "
                        "stopped or restarting), wait for it this long and go on by itself (default 12h; 0: fail as "
                        "any fault)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object on the last stdout line")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    from .agent import add_on_flags

    add_on_flags(p)
    p.add_argument("--via", metavar="site:NAME",
                   help="relay through the agent on that SSH site's host (store-and-forward with cut-through): this "
                        "computer's hop over the last mile, the agent's over the backbone; the far side as that host "
                        "sees it")
    p.add_argument("--keep", action="store_true", help="with --via: keep the relay's copy after DEST verified it")
    from .cluster import add_flags as add_cluster_flags

    add_cluster_flags(p)


def add_ssh_arguments(p: argparse.ArgumentParser) -> None:
    """The SSH login options every command that reaches a server takes (copy, preflight, compare): the SSH
    backend's declared options."""
    from backends.ssh.options import SshOptions

    add_option_flags(p.add_argument_group("SSH (sftp:// and scp://)"), SshOptions)


def overrides_from(args: argparse.Namespace) -> Overrides:
    """What the user typed for this transfer; the front door (``app.requests``) merges the rest."""
    return Overrides(
        streams=parse_streams(args.streams) if args.streams else None,
        checksum=parse_checksum(args.checksum) if args.checksum else None,
        limit_rate=parse_rate(args.limit_rate) if args.limit_rate else None,
        schedule=parse_schedule(args.bwlimit) if getattr(args, "bwlimit", None) else None,
        ca_file=args.ca_file,
        insecure=args.insecure or None,
        overwrite=args.overwrite or None,
        sync=args.sync,
        verify=False if args.no_verify else None,
        backend_options=backend_options(args),
        backend=args.backend,
        via=getattr(args, "via", None),
        max_depth=getattr(args, "max_depth", None),
        keep=getattr(args, "keep", False) or None,
        agent_command=getattr(args, "agent_command", None) if getattr(args, "via", None) else None,
        pack=getattr(args, "pack", False) or None,
        unpack=getattr(args, "unpack", False) or None,
    )


def backend_options(args: argparse.Namespace) -> dict:
    """Every backend's options given as flags; the front door refuses those the chosen backend lacks."""
    from backends.gridftp.options import GridftpOptions
    from backends.https.options import HttpsOptions
    from backends.ssh.options import SshOptions

    from .torrent import torrent_options

    return (torrent_options(args) | options_from_flags(args, SshOptions) | options_from_flags(args, HttpsOptions)
            | options_from_flags(args, GridftpOptions))


def _run_on(args: argparse.Namespace) -> int:
    from app.requests import overrides_to_wire

    from .agent import client_for

    with client_for(args) as client:
        view = client.call("submit", source=args.source, dest=args.dest,
                           overrides=overrides_to_wire(overrides_from(args)))
    if args.json:
        print(json.dumps(view))
    else:
        print(f"labferry: job {view['id']} queued on {args.on} ({view['state']}); it goes on without this computer. "
              f"See it with: labferry queue --on {args.on}")
    return 0


def progress_text(view) -> str:
    """A copy's progress line: how much, how fast, how long still, or what it waits for."""
    total = view.bytes_total
    pct = f"{100 * view.bytes_done / total:5.1f}%" if total else "  ?  "
    if view.waiting:  # no rate or ETA to show: what it waits for, and what it has
        return f"{pct}  {format_bytes(view.bytes_done)} / {format_bytes(total)}  waiting for {view.waiting}…"
    return (f"{pct}  {format_bytes(view.bytes_done)} / {format_bytes(total)}  {format_rate(view.rate)}"
            f"  ETA {format_duration(view.eta)}  streams {view.streams}  {view.state.value}")


def run(args: argparse.Namespace) -> int:
    from app.accessions.ids import is_accession
    from app.cli import EXIT_STATUSES
    from app.requests import resolve_here

    if args.input:
        if args.source is None or args.dest is not None:
            raise BadRequest("With -i LIST, give only the destination folder: labferry copy -i LIST DEST/.")
        args.source, args.dest = None, args.source  # the one word given is DEST
    elif args.source is None or args.dest is None:
        raise BadRequest("Give what to copy and where: labferry copy SRC DEST (or -i LIST DEST/).")
    if getattr(args, "cluster", None):  # spread over a cluster's nodes: planned here, fetched by Slurm's tasks
        from .cluster import run as run_cluster

        return run_cluster(args, overrides_from(args))
    if args.on and args.via:
        raise BadRequest("Give --on (run the whole copy on that host) or --via (relay through it), not both.")
    if args.on:  # the whole job runs on the agent, SRC and DEST as its host sees them
        return _run_on(args)
    if args.input or is_accession(args.source):
        from .accession import run as fetch_accession

        return fetch_accession(args, overrides_from(args))

    request = resolve_here(args.source, args.dest, overrides_from(args))
    request = replace(request, source=ask_password(request.source))
    from app.engine import Engine

    line = ProgressLine(not args.quiet)
    policy = _policy(args)
    engine = Engine(run_queue=False, max_jobs=1, retry=policy).start()
    events, unsubscribe = engine.bus.queue()
    view, stopped = None, None
    try:
        view = request.submit_to(engine)
        view = _follow(engine, view.id, events, line)
    except stopping.STOPS as exc:  # Ctrl-C or a batch system's kill: the job pauses, kept resumable
        stopped = exc
        line.clear()
        view = _paused(engine, view)
    finally:
        unsubscribe()
        _close(engine)
    line.done()
    if stopped is not None:
        print(f"labferry: {stopping.said(stopped)}: {_kept(view, request.dest)} Run the same command again to "
              "resume from where it stopped.", file=sys.stderr)
        if args.json and view is not None:
            print(json.dumps(_json_result(view, stopping.status(stopped))))
        return stopping.status(stopped)
    status = _report(view, args.json, EXIT_STATUSES)
    args.closed = not engine.running  # nothing left that the interpreter's tear-down would have to finish
    return status


def _policy(args: argparse.Namespace) -> RetryPolicy | None:
    from app.engine import RetryPolicy

    given = {}
    if args.retries is not None:
        given["max_retries"] = args.retries
    if getattr(args, "wait_network", None) is not None:
        given["network_wait"] = args.wait_network
    return RetryPolicy(**given) if given else None


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _max_depth(text: str) -> int:
    from backends.core.depth import MAX_DEPTH_LIMIT

    if not text.isdigit() or not 1 <= int(text) <= MAX_DEPTH_LIMIT:
        raise argparse.ArgumentTypeError(f"'{text}' is not a depth; give a number from 1 to {MAX_DEPTH_LIMIT}")
    return int(text)


def _retries(text: str) -> int:
    if not text.isdigit() or int(text) > 100:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of retries; give 0 to 100")
    return int(text)


def ask_password(url: str) -> str:
    """``https://USER@host/…`` (or ftp://, or a site with a user and no saved password): ask for the password
    at the terminal, as curl -u USER and FileZilla do; it stays in memory, in this process only."""
    from urllib.parse import quote, unquote, urlsplit

    from backends.core.netrc import netrc_login

    parts = urlsplit(url)
    if parts.scheme not in ASKS_PASSWORD or not parts.username or parts.password is not None:
        return url
    if not sys.stdin.isatty() or netrc_login(parts.hostname or "", unquote(parts.username)):
        return url  # a script (the server's 401 will say that a password is missing), or ~/.netrc has it
    try:
        secret = getpass.getpass(f"Password for {parts.username} at {parts.hostname}: ")
    except (EOFError, KeyboardInterrupt):
        print(file=sys.stderr)
        return url
    netloc = parts.netloc.replace(f"{parts.username}@", f"{parts.username}:{quote(secret, safe='')}@", 1)
    return parts._replace(netloc=netloc).geturl()


#: schemes whose user may have a password Ferry sends itself (SSH asks through its own prompt)
ASKS_PASSWORD = ("http", "https", "ftp", "ftps")


def _paused(engine: Engine, view):
    """The job paused after a stop; a second Ctrl-C meanwhile is not a traceback."""
    if view is None:
        return None
    try:
        return engine.pause(view.id)
    except (*stopping.STOPS, TimeoutError):
        return view


def _close(engine: Engine) -> None:
    """The engine closed; bounded (its jobs stop within seconds), and a second signal does not interrupt it."""
    try:
        engine.close(timeout=20)
    except (*stopping.STOPS, TimeoutError):
        pass


def _kept(view, dest: str) -> str:
    """What a stopped copy leaves for its resume, counted on disk (the part file's resume record)."""
    from backends.destination import kept_bytes

    if view is None:
        return "nothing was transferred yet."
    here = kept_bytes(dest)
    total = view.bytes_total
    if here is None:
        return f"{format_bytes(view.bytes_done)}{f' of {format_bytes(total)}' if total else ''} moved."
    return f"{format_bytes(here)}{f' of {format_bytes(total)}' if total else ''} kept in {dest}.part."


def _follow(engine: Engine, job_id: int, events: queue.Queue, line: ProgressLine):
    """Show events for our job until it settles; returns its last view."""
    from app.engine import JobState
    from app.engine.events import FINISHED, NOTE, PROGRESS, RETRYING, STATE

    view = engine.job(job_id)
    while not (view.state.terminal or view.state == JobState.PAUSED):
        try:
            event = events.get(timeout=0.5)
        except queue.Empty:
            view = engine.job(job_id)
            continue
        if event.job.id != job_id:
            continue
        view = event.job
        if event.kind == NOTE:  # what happened on the way, not an error: said as a note
            line.say(f"labferry: note: {event.message}")
        elif event.kind == RETRYING:
            line.say(f"labferry: {event.message}")
        elif event.kind in (PROGRESS, STATE):
            line.show(progress_text(view))
        elif event.kind == FINISHED:
            break
    return view


def _report(view, as_json: bool, exit_statuses: dict[str, int]) -> int:
    result = view.result or {}
    from app.engine import JobState

    if view.state == JobState.DONE:
        moved = result.get("bytes_fetched") or result["bytes"]  # 0 only when nothing at all crossed
        how = (f"{format_bytes(result['bytes'])} in {format_duration(result['seconds'])} "
               f"({format_rate(result['throughput_mbps'] * 1e6 / 8)}, {counted(result['streams'], 'stream')})"
               if moved else f"{format_bytes(result['bytes'])}, nothing needed sending")
        said = "verified" if result.get("verified") else "not verified"  # the word only where a check says it
        print(f"labferry: {view.dest}: {how}; sha256 {result['sha256']}; {said}: {result['verify_method']}.",
              file=sys.stderr)
        for note in result.get("notes", []) if result.get("hops") else ():
            print(f"labferry: note: {note}", file=sys.stderr)
        status = 0
    else:
        print(f"labferry: {view.error or 'the transfer did not finish.'}", file=sys.stderr)
        status = exit_statuses.get(view.error_kind or "", 1)
    if as_json:
        print(json.dumps(_json_result(view, status)))
    return status


def _json_result(view, status: int) -> dict:
    """The ``--json`` object: the last stdout line, for scripts."""
    result = view.result or {}
    return {
        "ok": status == 0,
        "job": view.id,
        "source": view.source,
        "dest": view.dest,
        "backend": view.backend,
        "state": view.state.value,
        "bytes": result.get("bytes", view.bytes_done),
        "seconds": round(result.get("seconds", 0.0), 3),
        "throughput_mbps": round(result.get("throughput_mbps", 0.0), 1),
        "streams": result.get("streams", view.streams),
        "verified": bool(result.get("verified", False)),
        "verify_method": result.get("verify_method"),
        "sha256": result.get("sha256"),
        "restarts": result.get("restarts", 0),
        "retries": result.get("retries", 0),
        "bytes_fetched": result.get("bytes_fetched"),
        "bytes_on_wire": result.get("bytes_on_wire"),
        "resumed_from": result.get("resumed_from", 0),
        "rtt_ms": result.get("rtt_ms"),
        "notes": result.get("notes", []),
        "hops": result.get("hops", []),
        "error": view.error,
        "error_kind": view.error_kind,
        "finished": time.time(),
    }
