"""The Help menu: the user guide, Ferry's log, and About (versions and where Ferry keeps its data and log), which
IT asks for first when something goes wrong."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QPlainTextEdit,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
)

import app
from app.paths import data_dir

#: the most of the log shown: its end, where the latest jobs are (the file rotates at 2 MB)
LOG_TAIL = 2_000_000
LOG_FILE = "ferry.log"


def add_help_menu(window) -> None:
    menu = window.menuBar().addMenu("&Help")
    guide = menu.addAction("User guide", lambda: show_guide(window))
    guide.setShortcuts(QKeySequence.keyBindings(QKeySequence.StandardKey.HelpContents) or [QKeySequence("F1")])
    menu.addAction("Ferry's log", lambda: show_log(window))
    menu.addSeparator()
    menu.addAction("About Ferry", lambda: show_about(window))


def guide_path() -> Path | None:
    """The user guide beside the program (a checkout, an installed bundle); None when it was not shipped."""
    here = Path(app.__file__).resolve().parent
    for candidate in (here.parent / "docs" / "user-guide.md", here / "docs" / "user-guide.md"):
        if candidate.is_file():
            return candidate
    return None


def _dialog(window, title: str, body, *, copy: str | None = None, folder: Path | None = None) -> QDialog:
    dialog = QDialog(window)
    dialog.setWindowTitle(title)
    dialog.resize(820, 560)
    layout = QVBoxLayout(dialog)
    layout.addWidget(body)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, dialog)
    if copy is not None:
        copied = QPushButton("Copy", dialog)
        copied.clicked.connect(lambda: QGuiApplication.clipboard().setText(copy))
        buttons.addButton(copied, QDialogButtonBox.ButtonRole.ActionRole)
    if folder is not None:
        opened = QPushButton("Open folder", dialog)
        opened.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))))
        buttons.addButton(opened, QDialogButtonBox.ButtonRole.ActionRole)
    buttons.rejected.connect(dialog.reject)
    layout.addWidget(buttons)
    window.last_help = dialog  # kept while open (and for the tests)
    dialog.open()
    return dialog


def show_guide(window) -> None:
    found = guide_path()
    body = QTextBrowser()
    body.setOpenExternalLinks(True)
    if found is None:
        body.setPlainText("The user guide was not installed with this copy of Ferry. It is docs/user-guide.md in "
                          "Ferry's source; the README lists the commands.")
    else:
        body.setSearchPaths([str(found.parent)])
        body.setMarkdown(found.read_text(encoding="utf-8", errors="replace"))
    _dialog(window, "Ferry user guide", body)


def read_log_tail(path: Path, most: int = LOG_TAIL) -> str:
    """The end of the log, whole lines only; a sentence when there is none yet."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - most))
            data = fh.read(most)
    except OSError:
        return f"There is no log yet at {path}: Ferry writes one once a transfer has run."
    text = data.decode("utf-8", errors="replace")
    return text.split("\n", 1)[1] if size > most and "\n" in text else text


def show_log(window) -> None:
    path = data_dir() / LOG_FILE
    body = QPlainTextEdit()
    body.setReadOnly(True)
    body.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    body.setPlainText(read_log_tail(path))
    body.moveCursor(body.textCursor().MoveOperation.End)
    _dialog(window, f"Ferry's log ({path})", body, folder=path.parent)


def about_text(window) -> str:
    import PySide6

    lines = [f"Ferry (labferry) {app.__version__}",
             f"Python {platform.python_version()} on {platform.system()} {platform.release()} ({platform.machine()})",
             f"Qt {PySide6.QtCore.qVersion()}, PySide6 {PySide6.__version__}"]
    try:
        import libtorrent

        lines.append(f"libtorrent {libtorrent.__version__}")
    except ImportError:
        lines.append("libtorrent: not installed (BitTorrent is off)")
    lines += ["", f"Data folder: {window.data_folder}", f"Database: {window.db_path}",
              f"Log: {data_dir() / LOG_FILE}", f"Program: {sys.executable}"]
    return "\n".join(lines)


def show_about(window) -> None:
    text = about_text(window)
    body = QPlainTextEdit()
    body.setReadOnly(True)
    body.setPlainText(text)
    _dialog(window, "About Ferry", body, copy=text, folder=Path(str(window.data_folder)))
