"""The desktop part of Ferry (Qt: the window, PDF reports, plots) is an extra, ``labferry[gui]``: a DTN runs the
CLI and the agent without a GUI toolkit. A command that needs it says so in one sentence, with the command that
adds it, instead of ending in an ImportError."""

from __future__ import annotations

import importlib.util
import sys

from backends.core.errors import Unavailable

INSTALL = "pip install 'labferry[gui]'"


def has_desktop() -> bool:
    """Whether Qt is installed (looked up, not imported: only the window's own modules import Qt)."""
    try:
        return importlib.util.find_spec("PySide6") is not None
    except ImportError:
        return False


def need_desktop(what: str, instead: str = "") -> None:
    """Raise the one-sentence error when Qt is missing; ``what`` is the thing asked for ("The window"),
    ``instead`` what does the same without it."""
    if not has_desktop():
        raise Unavailable(f"{what} needs Ferry's desktop part (Qt), which is not installed here; add it with "
                          f"{INSTALL}" + (f", or {instead}." if instead else "."))


def gui_console() -> None:
    """The ``labferry-gui`` program: the window, or the sentence above (exit 2)."""
    if not has_desktop():
        try:
            need_desktop("The window", "use the labferry command, which needs none")
        except Unavailable as exc:
            print(f"labferry-gui: {exc}", file=sys.stderr)
            sys.exit(exc.exit_status)
    from app.ui.app import main

    from . import setup_logging

    setup_logging()  # the window's jobs go to ferry.log too (Help → Ferry's log), as the command line's do
    sys.exit(main())
