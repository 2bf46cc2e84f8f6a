"""The window driven as a biologist drives it: the keyboard alone, the menu bar's Alt keys, a folder copied into
a folder that does not exist yet, a study's samplesheet reached from its row, plots that do not mislead, and
sentences in the window's words. Every step goes through the real actions, keys and menus."""

from __future__ import annotations

import random
import re
import time

from PySide6.QtCore import QObject, QPoint, Qt, QTimer, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QMenu, QTableView

from app.engine import JobState
from tests.integration.conftest import MiB, write_random
from tests.portable.dialogs import field

from .test_public_data import archive  # noqa: F401  (the stand-in portal)
from .test_window import job


def when_modal(act, owner, tries: int = 1200) -> None:
    """``act(dialog)`` once a modal dialog is up (polled for up to a minute: a file dialog on a loaded machine
    takes seconds); the polls belong to ``owner`` (the test's window) and end with it, never acting in the next
    test. A dialog ``act`` fails on is closed, so the failure is reported rather than left waiting."""
    def poll(left: int = tries) -> None:
        widget = QApplication.activeModalWidget()
        if widget is not None:
            try:
                act(widget)
            except BaseException:
                widget.reject() if hasattr(widget, "reject") else widget.close()
                raise
        elif left:
            QTimer.singleShot(50, owner, lambda: poll(left - 1))
    QTimer.singleShot(50, owner, poll)


def test_ctrl_v_opens_new_transfer_with_the_clipboard_filled_in_and_queues_nothing_until_ok(qtbot, window, nginx,
                                                                                          tmp_path):
    write_random(nginx.data / "pasted.bin", MiB, seed=451)
    url = nginx.url("pasted.bin", scheme="http")
    QApplication.clipboard().setText(url)
    seen = {}

    def look(dialog) -> None:
        seen["from"] = field(dialog, "From").text()
        seen["queued"] = len(window.queue_model.views())
        to = field(dialog, "To")
        to.clear()
        QTest.keyClicks(to, str(tmp_path / "pasted"))
        QTest.mouseClick(dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok),
                         Qt.MouseButton.LeftButton)

    when_modal(look, window)
    window.activateWindow()
    window.queue_view.setFocus()
    QTest.keyClick(window.queue_view, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert seen == {"from": url, "queued": 0}  # nothing queued before the user chose where and pressed OK
    qtbot.waitUntil(lambda: (v := job(window, "pasted.bin")) is not None and v.state == JobState.DONE,
                    timeout=30_000)
    assert (tmp_path / "pasted" / "pasted.bin").stat().st_size == MiB  # "into folder X": X/pasted.bin


def test_the_menu_bar_reaches_every_action_by_its_alt_key(window):
    menus = {a.text(): a.menu() for a in window.menuBar().actions()}
    assert set(menus) >= {"&File", "&Transfers", "&Sites", "&View"}
    texts = {a.text() for menu in menus.values() for a in menu.actions() if not a.isSeparator()}
    assert {"New transfer…", "Public data…", "Pause", "Resume", "Retry", "Cancel", "Add site…", "Preflight…",
            "Quit", "Files", "History", "Details pane"} <= texts
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_V, Qt.KeyboardModifier.AltModifier)  # Alt+V opens View
    QTest.qWait(200)
    assert isinstance(QApplication.activePopupWidget(), QMenu) and QApplication.activePopupWidget().title() == "&View"
    QTest.keyClick(QApplication.activePopupWidget(), Qt.Key.Key_Escape)


def test_tab_leaves_a_table_and_alt_2_shows_the_files_tab(qtbot, window):
    window.activateWindow()
    window.queue_view.setFocus()
    QTest.keyClick(window.queue_view, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is not window.queue_view  # out of the table, as everywhere else
    QTest.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.AltModifier)
    assert window.tabs.currentWidget() is window.files
    assert not window.details.isVisible()  # the details of a transfer belong to Queue and History
    QTest.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.AltModifier)
    assert window.tabs.currentWidget() is window.queue_view and window.details.isVisible()
    QTest.keyClick(window, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert not window.details.isVisible()


def test_a_web_folder_into_a_folder_that_does_not_exist_yet_lands_in_its_own_folder(qtbot, window, nginx,
                                                                                    tmp_path):
    run = nginx.data / f"run-{time.monotonic_ns()}"
    run.mkdir()
    for i in range(3):
        write_random(run / f"r{i}.fq", 2000 + i, seed=460 + i)
    url = nginx.url(f"{run.name}/", scheme="http")

    def fill(dialog) -> None:
        QTest.keyClicks(field(dialog, "From"), url)
        to = field(dialog, "To")
        to.clear()
        QTest.keyClicks(to, str(tmp_path / "Downloads"))  # not there yet
        QTest.mouseClick(dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok),
                         Qt.MouseButton.LeftButton)

    when_modal(fill, window)
    window.actions_by_name["new"].trigger()
    qtbot.waitUntil(lambda: (v := job(window, run.name)) is not None and v.state.terminal, timeout=30_000)
    assert job(window, run.name).state == JobState.DONE, job(window, run.name).error
    assert sorted(p.name for p in (tmp_path / "Downloads" / run.name).iterdir()) == ["r0.fq", "r1.fq", "r2.fq"]


class _Opened(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url)


def test_a_studys_row_leads_to_its_folder_and_samplesheet(qtbot, window, archive, tmp_path, monkeypatch):  # noqa: F811
    import app.ui.public_data as public_data
    from app.ui.accession_dialog import AccessionDialog

    archive.add_run("ERR0007101", experiment="ERX0007101", layout="SINGLE", sample="SAMEA0007101",
                    study="ERP000778", project="PRJEB7778",
                    fastq=[("ERR0007101.fastq.gz", random.Random(7).randbytes(MiB))])
    window.settings["download_folder"] = str(tmp_path)
    seen = {}

    class Answering(AccessionDialog):
        def exec(self) -> int:
            self.show()
            qtbot.waitUntil(lambda: self.plan is not None, timeout=20_000)
            seen["dest"] = self.dest.text()  # what the dialog suggests, untouched
            return 1

    monkeypatch.setattr(public_data, "AccessionDialog", Answering)
    window.public_data("PRJEB7778")
    assert seen["dest"] == str(tmp_path / "PRJEB7778")  # a folder of its own, not loose in Downloads
    qtbot.waitUntil(lambda: (v := job(window, "PRJEB7778")) is not None and v.state == JobState.DONE, timeout=60_000)
    qtbot.waitUntil(lambda: (tmp_path / "PRJEB7778" / "samplesheet.csv").exists(), timeout=10_000)
    view = job(window, "PRJEB7778")
    window.resize(1024, 640)  # the smallest screen the window is made for: the links are in sight there too
    QApplication.processEvents()
    rect = window.queue_view.visualRect(window.queue_model.index(window.queue_model.row_of(view.id), 0))
    qtbot.mouseClick(window.queue_view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: "samplesheet.csv" in window.details.toPlainText(), timeout=5_000)
    html = window.details.toHtml()
    assert (tmp_path / "PRJEB7778" / "samplesheet.csv").as_uri() in html and "metadata.tsv" in html
    link = window.details.cursorRect(window.details.document().find("samplesheet.csv"))
    # the links once came below eleven rows of figures: out of sight in a pane a fifth of the window high
    assert 0 <= link.top() and link.bottom() <= window.details.viewport().height(), \
        (link, window.details.viewport().height())
    opened = _Opened()
    QDesktopServices.setUrlHandler("file", opened, "open")
    try:
        rect = window.queue_view.visualRect(window.queue_model.index(window.queue_model.row_of(view.id), 0))
        window.queue_view.customContextMenuRequested.emit(rect.center())
        menu = window.last_menu
        action = next(a for a in menu.actions() if a.text() == "Open folder")
        action.trigger()
        menu.close()
    finally:
        QDesktopServices.unsetUrlHandler("file")
    assert [u.toLocalFile() for u in opened.urls] == [str(tmp_path / "PRJEB7778")]


def test_the_plots_show_one_named_series_per_path_kind_at_historys_rate_in_whole_streams(window):
    from app.store import Store

    now = time.time()
    with Store() as store:
        for i, (source, dest, backend, wire) in enumerate([
                ("sftp://h/run.fq", "/tmp/x", "ssh", 117), ("/tmp/y", "sftp://h/up/", "ssh", 300),
                ("http://h/a.bin", "/tmp/z", "https", 800)]):
            hid = store.history.add(job_id=100 + i, source=source, dest=dest, backend=backend, outcome="done",
                                    bytes=10 * MiB, seconds=1.0, throughput_mbps=389.0 + i, streams=2 + i,
                                    started=now - 100 + i)
            assert hid
            store.benchmarks.add(job_id=100 + i, backend=backend, peer_host="h", streams=2 + i,
                                 bytes=int(wire * 1e6 / 8), seconds=1.0, rtt_ms=20.0, started=now - 100 + i)
    window.tabs.setCurrentWidget(window.benchmarks)
    plots = window.benchmarks
    names = sorted(plots.series())
    assert names == ["h · HTTP · download", "h · SFTP · download", "h · SFTP · upload"]
    legend = plots.by_time.getPlotItem().legend
    assert sorted(label.text for _, label in legend.items) == names
    first = plots.series()["h · SFTP · download"][0]
    assert first["shown_mbps"] == 389.0  # History's rate, not the 117 on the wire
    axis = plots.by_streams.getPlotItem().getAxis("bottom")
    ticks = [v for _, values in axis.tickValues(1.6, 2.4, 400) for v in values]
    assert ticks and all(float(v).is_integer() for v in ticks)
    assert axis.tickStrings(ticks, 1, 1) == [str(int(v)) for v in ticks]  # "2", not "2.0"
    clock = plots.by_time.getPlotItem().getAxis("bottom")
    shown = [v for _, values in clock.tickValues(*plots.by_time.viewRange()[0], 800) for v in values]
    labels = clock.tickStrings(shown, 1, shown[1] - shown[0] if len(shown) > 1 else 10)
    assert labels and all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", text) for text in labels), labels  # the clock
    base = plots.by_streams.backgroundBrush().color()
    assert base == QApplication.palette().color(QApplication.palette().ColorRole.Base)
    assert isinstance(window.queue_view, QTableView) and QPoint  # (imports used by the other tests)


def test_one_benchmark_draws_no_negative_streams_and_a_readable_legend(window):
    """After one SSH download the streams axis ran −6 … 8 around its single point, and the legend was pale grey:
    stream counts and rates start at zero, and the legend's names are in the text's colour."""
    from app.store import Store

    now = time.time()
    with Store() as store:
        store.history.add(job_id=7, source="sftp://h/one.fq", dest="/tmp/one", backend="ssh", outcome="done",
                          bytes=10 * MiB, seconds=1.0, throughput_mbps=80.0, streams=8, started=now - 5)
        store.benchmarks.add(job_id=7, backend="ssh", peer_host="h", streams=8, bytes=10 * MiB, seconds=1.0,
                             rtt_ms=20.0, started=now - 5)
    window.tabs.setCurrentWidget(window.benchmarks)
    plots = window.benchmarks
    plots.refresh()
    QApplication.processEvents()
    (x0, x1), (y0, _) = plots.by_streams.viewRange()
    assert x0 >= -0.5 and x1 >= 8 and y0 >= 0, plots.by_streams.viewRange()
    text = QApplication.palette().color(QApplication.palette().ColorRole.Text)
    legend = plots.by_streams.getPlotItem().legend
    assert legend.items and all(label.opts.get("color") is not None and
                                label.item.defaultTextColor() == text for _, label in legend.items)


def test_a_benchmark_series_is_named_by_its_site_not_its_address(window):
    """Series were named by IP: a transfer from a saved site is drawn under the site's name, matched by its
    profile (the web server on the same host is another series)."""
    from app.sites import Site, SiteBook
    from app.store import Store

    now = time.time()
    with Store() as store:
        SiteBook(store).save(Site("genome-dtn", "sftp", "10.9.8.7", None, "jdoe", "/data"))
        for i, source in enumerate(("sftp://10.9.8.7/data/a.fq", "https://10.9.8.7/pub/b.fq")):
            store.history.add(job_id=300 + i, source=source, dest="/tmp/x", backend="ssh" if i == 0 else "https",
                              outcome="done", bytes=10 * MiB, seconds=1.0, throughput_mbps=80.0, streams=4,
                              started=now - 10 + i)
            store.benchmarks.add(job_id=300 + i, backend="ssh" if i == 0 else "https", peer_host="10.9.8.7",
                                 streams=4, bytes=10 * MiB, seconds=1.0, rtt_ms=20.0, started=now - 10 + i)
    window.tabs.setCurrentWidget(window.benchmarks)
    window.benchmarks.refresh()
    assert sorted(window.benchmarks.series()) == ["10.9.8.7 · HTTPS · download", "genome-dtn · SFTP · download"]
