"""The window's public data: accessions from the toolbar, the New transfer box or a drop, queued as one job.

A mix-in of the main window (as ``history_tab.py``): the dialog shows what the accessions resolve to, Fetch
queues the list job through the front door (``app.accessions.queued``), and when such a job ends the folder
gets its samplesheet and the files that failed by HTTPS are queued again by FTP.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.accessions.ids import is_accession
from app.accessions.plans import apply_layout, words_of
from app.accessions.queued import COMPLETING, finish, queue_request
from app.engine import JobView
from app.requests import Defaults
from app.store import Store
from app.units import counted
from backends.core.errors import TransferError

from .accession_dialog import AccessionDialog


def accessions_in(text: str) -> list[str]:
    """The words of ``text`` when every one is an accession (a pasted or dropped list), else none."""
    words = words_of(text)
    return words if words and all(is_accession(w) and "://" not in w for w in words) else []


class PublicData:
    """Needs from the window: ``bridge``, ``db_path``, ``settings``, ``_show_error``, ``status``."""

    def public_data(self, text: str = "", folder: str | None = None) -> None:
        folder = folder or self.settings.get("download_folder") or str(Path.home() / "Downloads")
        dialog = AccessionDialog(self, text, folder)
        if not dialog.exec() or dialog.plan is None:
            return
        try:
            with Store(self.db_path) as store:
                request = queue_request(apply_layout(dialog.plan, dialog.layout), dialog.folder,
                                        defaults=Defaults.from_settings(self.settings), store=store,
                                        sheet=dialog.sheet_choice, layout=dialog.layout)
        except TransferError as exc:
            self._show_error(str(exc))
            return
        self.bridge.call("submit", *request.submit_args())

    def accession_finished(self, view: JobView) -> None:
        """A list job ended: a .sra from NCBI converted and the samplesheet written in a worker thread (a
        conversion takes minutes), then the other route for what failed by this one, back on the window's."""
        if not view.files:
            return
        finisher = _Finisher(self)
        finisher.done.connect(lambda answer: (self._accession_done(view, answer), finisher.deleteLater()))
        defaults = Defaults.from_settings(self.settings)

        def work() -> None:  # no Qt here but the signal
            try:
                with Store(self.db_path) as store:
                    answer: object = finish(view.source, Path(view.dest), view.files, defaults=defaults, store=store)
            except (TransferError, OSError) as exc:
                answer = exc
            finisher.done.emit(answer)

        threading.Thread(target=work, name="ferry-accession-finish", daemon=True).start()

    def _accession_done(self, view: JobView, answer) -> None:
        if isinstance(answer, Exception):
            self._show_error(f"{view.source}: {answer}" if isinstance(answer, TransferError) and "fasterq-dump" in
                             str(answer) else f"{view.source}: the samplesheet could not be written ({answer}).")
            return
        _, again, note, left_out = answer
        if note:  # a run left short of a read (an index ENA dropped): said where the CLI prints its note
            self.notify("Reads missing from ENA's files", f"{view.source}: {note}")
        if left_out:  # a run whose files did not all arrive is not in the sheet: said, as the CLI's note
            self.notify("Runs left out of the samplesheet", f"{view.source}: {left_out}")
        if again is not None:
            count = counted(len(again.options.files), "file")
            self.status.setText(f"{view.source}: fetching {count} from NCBI, for the reads ENA's FASTQ lack"
                                if again.source.endswith(COMPLETING) else
                                f"{view.source}: trying {count} by the other route")
            self.bridge.call("submit", *again.submit_args())


class _Finisher(QObject):
    """Carries a finished accession's answer from the worker thread to the window's (a queued signal)."""

    done = Signal(object)
