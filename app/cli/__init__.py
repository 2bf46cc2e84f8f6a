"""``labferry``: the command line over the same engine as the GUI (for HPC nodes and scripts).

Every failure is one sentence on stderr and a non-zero exit status that says
what kind of failure it was (see ``EXIT_STATUSES`` and the README).
"""

from __future__ import annotations

import argparse
import logging
import logging.handlers
import os
import sys
from pathlib import Path

from app import __version__
from app import stops as stopping
from backends.core import errors

from . import agent, archive, cluster, copy, doctor, listing, preflight, report, sites, torrent


def _exit_statuses() -> dict[str, int]:
    """error kind → exit status, from the error classes themselves."""
    found, todo = {}, [errors.TransferError]
    while todo:
        cls = todo.pop()
        found[cls.kind] = cls.exit_status
        todo.extend(cls.__subclasses__())
    return found


EXIT_STATUSES = _exit_statuses()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="labferry",
        description="Ferry moves large research data over long, fast networks with parallel streams.",
    )
    parser.add_argument("--version", action="version", version=f"labferry {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    copy.add_parser(sub)
    gui = sub.add_parser("gui", help="open the desktop app")
    gui.add_argument("--quit-after", type=float, metavar="SECONDS",
                     help="close again after SECONDS once the window is shown (start-up checks of a bundle)")
    gui.add_argument("items", nargs="*", metavar="URL_OR_FILE",
                     help="addresses, .torrent files, magnet links or accessions to add (to the window already open, "
                          "if there is one)")
    gui.set_defaults(handler=lambda args: _gui(args.quit_after, args.items))
    listing.add_parsers(sub)
    doctor.add_parser(sub)
    sites.add_parser(sub)
    report.add_parser(sub)
    preflight.add_parsers(sub)
    torrent.add_parsers(sub)
    archive.add_parsers(sub)
    agent.add_parsers(sub)
    cluster.add_task_parser(sub)
    from . import accession, completion

    accession.add_ls_parser(sub)

    completion.add_parser(sub)
    _common_flags(sub)
    return parser


def _common_flags(sub) -> None:
    """-v/--verbose and -q/--quiet on every command and sub-command, as scripts expect of a command-line tool."""
    for command in sub.choices.values():
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                _common_flags(action)
        taken = {s for action in command._actions for s in action.option_strings}
        if "-v" not in taken:
            command.add_argument("-v", "--verbose", action="count", default=0,
                                 help="say more: what happens underneath, on stderr (-vv: everything)")
        if "-q" not in taken:
            command.add_argument("-q", "--quiet", action="store_true", help="no progress line")


def _gui(quit_after: float | None = None, items: list[str] | None = None) -> int:
    from .desktop import need_desktop

    need_desktop("The window", "use the other labferry commands, which need none")
    from app.ui.app import main as gui_main

    return gui_main([], quit_after=quit_after, items=items or [])


def setup_logging(verbose: int = 0) -> None:
    """Details go to ferry.log in the data folder; the terminal gets sentences only, and with -v the details
    too (-vv: debugging)."""
    from app.paths import data_dir

    if verbose:
        said = logging.StreamHandler(sys.stderr)
        said.setFormatter(logging.Formatter("labferry: [%(name)s] %(message)s"))
        said.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
        logging.getLogger().addHandler(said)
        logging.getLogger().setLevel(said.level)

    try:
        handler = PrivateLog(data_dir() / "ferry.log", maxBytes=2_000_000, backupCount=3)
    except OSError:
        return  # a log file that cannot be opened must not stop a transfer; a data folder that cannot is said
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.INFO, logging.INFO))


class PrivateLog(logging.handlers.RotatingFileHandler):
    """The log, each new file of it 0600: it names every job's addresses (``app.paths``)."""

    def _open(self):
        from app.paths import private_file

        private_file(Path(self.baseFilename))
        return super()._open()


def quiet_threads() -> None:
    """An exception that ends a library's own thread (paramiko's prefetch when a server dies) goes to the log,
    not to the terminal as a traceback: the job's own error is what the user reads."""
    import threading

    def log_it(args) -> None:
        if args.exc_type is SystemExit:
            return
        logging.getLogger("ferry.threads").error("thread %s ended with %s: %s", getattr(args.thread, "name", "?"),
                                                  args.exc_type.__name__, args.exc_value,
                                                  exc_info=(args.exc_type, args.exc_value, args.exc_traceback))

    threading.excepthook = log_it


def console() -> None:
    """The ``labferry`` program: ``main``, then exit.

    A command that has closed everything it opened (``copy``: the engine's thread, its store, its files)
    sets ``args.closed``; the process then ends without the interpreter's tear-down, which after a transfer
    takes 50-100 ms (joining idle worker threads, freeing every module) - time a user waits for nothing.
    """
    if sys.argv[1:2] == ["zstd"]:  # once per compressed range on a server without zstd: no parser, no store
        from backends.ssh.zfilter import main as zstd

        sys.exit(zstd(sys.argv[2:]))
    args = argparse.Namespace()
    status = main(namespace=args)
    if getattr(args, "closed", False):
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(status)
    sys.exit(status)


def main(argv: list[str] | None = None, namespace: argparse.Namespace | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv, namespace)
    if not args.command:
        parser.print_help()
        return 0
    try:
        if args.command != "gui":  # the window handles its own quitting
            stopping.install()
        setup_logging(getattr(args, "verbose", 0) or 0)
        quiet_threads()
        return args.handler(args)
    except errors.TransferError as exc:
        print(f"labferry: {exc}", file=sys.stderr)
        return exc.exit_status
    except stopping.STOPS as stop:
        print(f"labferry: {stopping.said(stop)}.", file=sys.stderr)
        return stopping.status(stop)
    except BrokenPipeError:  # `labferry history | head`: the reader left; not an error worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        sqlite = sys.modules.get("sqlite3")
        if sqlite is None or not isinstance(exc, sqlite.DatabaseError):
            raise
        print(f"labferry: Ferry's database could not be read ({exc}); run `labferry doctor`, which moves a damaged "
              "one aside and starts a new one.", file=sys.stderr)
        return errors.LocalError.exit_status


if __name__ == "__main__":
    sys.exit(main())
