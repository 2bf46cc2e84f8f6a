"""Torrents in the window: create one from a file or folder and seed it, and a Seeding view of what is shared.

Creating hashes every byte (SHA-256 pieces), which takes a while for a 100 GB run: it runs on a worker thread
and the dialog shows its progress, so the window never stops. The options are ``labferry torrent create``'s
(private by default, web seeds, trackers, v1+v2 hybrid). Seeding is an engine job like any other (the torrent
backend's ``Seeder``), listening where the user says; the Seeding tab lists those jobs with their peers, what
they served, the ratio and the upload rate, and stops or removes them.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.engine import JobState, JobView
from app.units import format_bytes, format_rate
from backends.core.errors import TransferError

from .dialogs import with_browse

DEFAULT_LISTEN = "0.0.0.0:6881"


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


class CreateTorrentDialog(QDialog):
    """What to share and how; ``torrent`` is the file written once the dialog is accepted."""

    hashed = Signal(int, int)  # pieces done, pieces in all (from the worker thread: queued)
    ended = Signal(object)  # the .torrent's path, or the error's sentence

    def __init__(self, parent=None, path: str = "", writing=None) -> None:
        """``writing()``: the destinations of the transfers still running (nothing is shared from those)."""
        super().__init__(parent)
        self.writing = writing or (lambda: [])
        self.setWindowTitle("Create a torrent")
        self.torrent: Path | None = None
        form = QFormLayout(self)
        self.path = QLineEdit(path, self)
        self.path.setPlaceholderText("the file or folder to share")
        folder_too = QPushButton("Folder…", self)
        folder_too.clicked.connect(self._pick_folder)
        row = QWidget(self)
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(with_browse(self.path, False, self))
        line.addWidget(folder_too)
        self.output = QLineEdit(self)
        self.output.setPlaceholderText("where the .torrent goes (default: beside the data)")
        self.web_seeds = QPlainTextEdit(self)
        self.web_seeds.setPlaceholderText("optional: https:// addresses serving the same data, one per line")
        self.web_seeds.setFixedHeight(54)
        self.trackers = QLineEdit(self)
        self.trackers.setPlaceholderText("optional: tracker URLs, separated by spaces")
        self.private = QCheckBox("Private: only peers you name (no DHT or peer exchange)", self)
        self.private.setChecked(True)
        self.hybrid = QCheckBox("Also for BitTorrent v1 clients (SHA-1 pieces too)", self)
        # the lab default between Ferry peers: TLS (AES, authenticated peers) instead of RC4 for anyone
        self.tls = QCheckBox("TLS: only peers with a certificate from this lab's CA (Ferry peers; give others one "
                             "with labferry torrent cert)", self)
        self.tls.setChecked(True)
        self.tls.setToolTip("Unchecked: RC4 encryption, for swarms with other BitTorrent clients.")
        self.seed = QCheckBox("Seed it now", self)
        self.seed.setChecked(True)
        self.listen = QLineEdit(DEFAULT_LISTEN, self)
        self.progress = QProgressBar(self)
        self.progress.setVisible(False)
        self.message = QLabel("", self)
        self.message.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        self.create_button = self.buttons.addButton("Create", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self._start)
        self.buttons.rejected.connect(self.reject)
        for label, widget in (("Share", row), ("Torrent file", self.output), ("Web seeds", self.web_seeds),
                              ("Trackers", self.trackers), ("", self.private), ("", self.hybrid), ("", self.tls),
                              ("", self.seed),
                              ("Listen on", self.listen), ("", self.progress), ("", self.message),
                              ("", self.buttons)):
            form.addRow(label, widget)
        self.hashed.connect(self._hashed)
        self.ended.connect(self._ended)

    def _pick_folder(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        chosen = QFileDialog.getExistingDirectory(self, "Folder to share")
        if chosen:
            self.path.setText(chosen)

    def target(self) -> Path:
        data = Path(self.path.text().strip()).expanduser()
        given = self.output.text().strip()
        return Path(given).expanduser() if given else data.parent / f"{data.resolve().name}.torrent"

    def _start(self) -> None:
        data = Path(self.path.text().strip()).expanduser()
        if not self.path.text().strip() or not data.exists():
            self.message.setText("Choose a file or folder that exists to share.")
            return
        busy = [d for d in self.writing() if _inside(Path(d).expanduser(), data) or _inside(data, Path(d))]
        if busy:  # hashed now, the pieces would not match the files once the transfer has written the rest
            self.message.setText(f"A transfer is still writing into {busy[0]}. Share it once that transfer has "
                                 "finished: a torrent is made of the files as they are now.")
            return
        target = self.target()
        if not target.parent.is_dir():
            self.message.setText(f"The folder {target.parent} does not exist. Choose another place for the torrent.")
            return
        self.create_button.setEnabled(False)
        self.progress.setVisible(True)
        self.message.setText("Hashing the data…")
        seeds = tuple(s.strip() for s in self.web_seeds.toPlainText().splitlines() if s.strip())
        trackers = tuple(self.trackers.text().split())
        threading.Thread(target=self._work, name="ferry-torrent", daemon=True,
                         args=(data, target, seeds, trackers, self.private.isChecked(), not self.hybrid.isChecked(),
                               self.tls.isChecked())).start()

    def _work(self, data: Path, target: Path, seeds, trackers, private: bool, v2_only: bool,
              tls: bool) -> None:  # no Qt here
        from backends.torrent.create import create

        try:
            root = None
            if tls:  # this installation's lab CA, and its own certificate from it to seed with
                from app.paths import data_dir
                from backends.torrent.tls import creator_ca, root_pem

                root = root_pem(creator_ca(data_dir() / "tls"))
            body = create(data, web_seeds=seeds, private=private, v2_only=v2_only, trackers=trackers,
                          progress=lambda done, total: self.hashed.emit(done, total), root_cert=root)
            target.write_bytes(body)
            self.ended.emit(target)
        except TransferError as exc:
            self.ended.emit(str(exc))
        except OSError as exc:
            self.ended.emit(f"The torrent could not be written to {target} ({exc.strerror}). Choose another place.")
        except Exception as exc:  # libtorrent's own errors: said, never a traceback on a worker thread
            self.ended.emit(f"The torrent could not be made ({type(exc).__name__}: {exc}).")

    def _hashed(self, done: int, total: int) -> None:
        self.progress.setMaximum(max(1, total))
        self.progress.setValue(done)

    def _ended(self, answer) -> None:
        if isinstance(answer, str):
            self.message.setText(answer)
            self.create_button.setEnabled(True)
            self.progress.setVisible(False)
            return
        self.torrent = answer
        self.accept()


SEED_COLUMNS = ("Shared", "Data", "Peers", "Served", "Ratio", "Upload rate", "State")


class SeedingView(QWidget):
    """The jobs that serve torrents: peers, bytes served, ratio, rate; Stop and Remove act on the selected one."""

    def __init__(self, call, parent=None) -> None:
        super().__init__(parent)
        self.call = call  # the bridge's call(verb, job id)
        self.views: dict[int, JobView] = {}
        self.sizes: dict[int, int | None] = {}
        layout = QVBoxLayout(self)
        self.table = QTableWidget(0, len(SEED_COLUMNS), self)
        self.table.setTabKeyNavigation(False)  # Tab moves on to the next control
        self.table.setHorizontalHeaderLabels(SEED_COLUMNS)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        buttons = QHBoxLayout()
        self.stop = QPushButton("Stop seeding", self)
        self.remove = QPushButton("Remove", self)
        self.stop.clicked.connect(lambda: self._each("cancel"))
        self.remove.clicked.connect(lambda: self._each("remove"))
        buttons.addWidget(self.stop)
        buttons.addWidget(self.remove)
        buttons.addStretch(1)
        self.empty = QLabel("Nothing is shared. Create a torrent (Ctrl+Shift+B) to share a file or folder with "
                            "other labs.", self)
        self.empty.setStyleSheet("color: gray;")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.empty)
        layout.addWidget(self.table)
        layout.addLayout(buttons)
        self._fill()

    def update_jobs(self, changed: dict[int, JobView]) -> None:
        for job_id, view in changed.items():
            if view.seeding:
                self.views[job_id] = view
        self._fill()

    def forget(self, job_id: int) -> None:
        self.views.pop(job_id, None)
        self._fill()

    def _fill(self) -> None:
        rows = sorted(self.views.values(), key=lambda v: v.id)
        self.table.setRowCount(len(rows))
        for row, view in enumerate(rows):
            size = self.sizes.get(view.id) or _torrent_size(view.source)
            self.sizes[view.id] = size
            ratio = f"{view.bytes_done / size:.2f}" if size else "-"
            active = view.state == JobState.RUNNING
            for column, text in enumerate((Path(view.source).name, view.dest, str(view.streams if active else 0),
                                           format_bytes(view.bytes_done), ratio,
                                           format_rate(view.rate) if active else "-",
                                           "seeding" if active else view.state.value)):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, view.id)
                self.table.setItem(row, column, item)
        self.empty.setVisible(not rows)

    def selected_ids(self) -> list[int]:
        rows = {i.row() for i in self.table.selectionModel().selectedRows()}
        return [self.table.item(r, 0).data(Qt.ItemDataRole.UserRole) for r in sorted(rows)]

    def _each(self, verb: str) -> None:
        for job_id in self.selected_ids():
            self.call(verb, job_id)
            if verb == "remove":
                self.forget(job_id)


def _torrent_size(path: str) -> int | None:
    """The data's size a torrent describes (for the ratio); None when it cannot be read."""
    try:
        import libtorrent as lt

        from backends.torrent.browse import data_files

        return sum(f.size for f in data_files(lt.torrent_info(path)))
    except Exception:
        return None
