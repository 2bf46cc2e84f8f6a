"""The main window: sites on the left, Queue / History / Benchmarks in the middle, details below.

Every engine call goes through ``EngineBridge.call`` (the engine's loop does the work, the
answer comes back as a signal), so no click ever waits on the network.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QTabWidget,
)

from app.engine import JobState, JobView
from app.requests import Defaults, Overrides, resolve
from app.sites import site_of
from app.store import Store
from app.units import counted, format_rate
from backends.core.errors import TransferError

from . import cap_status
from .agents_tab import AgentsTab, RemoteJobs
from .asking import leaving_choice, remove_site
from .bridge import EngineBridge
from .details import DetailsPane
from .dialogs import NewTransferDialog, SettingsDialog
from .files_tab import FilesTab
from .history_model import HistoryModel
from .history_tab import HistoryTab
from .icons import ACTIONS, icon
from .opening import Opening
from .panels import Sidebar, Tray, app_icon, apply_theme, empty_hint
from .plots import BenchmarksView
from .public_data import PublicData, accessions_in
from .queue_menu import queue_menu
from .queue_model import QueueModel, queue_table, selected_views
from .remembered import note_folder, remember, restore, start_folder
from .reporting import ReportExporter
from .site_actions import SiteActions
from .torrents import SeedingView
from .what_choice import what_overrides
from .window_actions import build_actions
from .words import for_window

log = logging.getLogger(__name__)


class MainWindow(HistoryTab, PublicData, Opening, RemoteJobs, SiteActions, QMainWindow):
    def __init__(self, engine, db_path: Path, data_folder: Path) -> None:
        super().__init__()
        self.engine, self.db_path, self.data_folder = engine, db_path, data_folder
        self.setWindowTitle("Ferry")
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self.resize(1200, 760)
        self._really_quit = False
        self.last_error: str | None = None
        self.last_notice: tuple[str, str] | None = None
        self.settings = self._load_settings()
        self.bridge = EngineBridge(engine, self)
        self.queue_model = QueueModel(self)
        self._build()
        self.bridge.jobs_changed.connect(self._jobs_changed)
        self.bridge.job_removed.connect(self.queue_model.remove)
        self.bridge.job_removed.connect(self.seeding.forget)
        self.bridge.job_finished.connect(self._job_finished)
        self.bridge.call_failed.connect(self._show_error)
        self.bridge.call("jobs", done=self._all_jobs)
        self.tray = Tray(self, self) if Tray.available() else None
        if self.tray:
            self.tray.show()
        self.refresh_sites()
        restore(self)  # size, splitters, History's filters, as they were at the last quit
        self.history_model.refresh()

    # -- building ---------------------------------------------------------------------------
    def _build(self) -> None:
        self.sidebar = Sidebar(self)
        self.sidebar.files_dropped_on_site.connect(self.upload_to_site)
        self.sidebar.site_activated.connect(self.edit_site)
        self.sidebar.site_removed.connect(lambda name: remove_site(self, name))
        self.queue_view = queue_table(self.queue_model, self)
        self.queue_view.selectionModel().selectionChanged.connect(self._selection_changed)
        self.queue_view.customContextMenuRequested.connect(self._queue_menu)
        self.empty_hint = empty_hint(self.queue_view)
        self.history_model = HistoryModel(self.db_path, self)
        self.reporter = ReportExporter(self.db_path, self)
        self.reporter.finished.connect(self._report_written)
        self.reporter.failed.connect(self._show_error)
        self.last_report: str | None = None
        self.tabs = QTabWidget(self)
        self.tabs.tabBar().setChangeCurrentOnDrag(True)  # a drag from a pane held over "Queue" opens it
        self.tabs.setAcceptDrops(True)
        self.tabs.tabBar().setAcceptDrops(True)
        self.tabs.addTab(self.queue_view, "Queue")
        self.files = FilesTab(self.bridge, self._sites, self.secret_of, self.submit, self._show_error, self)
        self.tabs.addTab(self.files, "Files")
        self.history_page = self._history_tab()
        self.tabs.addTab(self.history_page, "History")
        self.benchmarks = BenchmarksView(self._benchmark_rows, self)
        self.tabs.addTab(self.benchmarks, "Benchmarks")
        self.seeding = SeedingView(self.bridge.call, self)
        self.tabs.addTab(self.seeding, "Seeding")
        self.agents = AgentsTab(self._sites, self.db_path, self)
        self.agents.remote_finished.connect(self._remote_finished)
        self.agents.reached.connect(lambda *_: self.refresh_sites())
        self.tabs.addTab(self.agents, "Agents")
        self.tabs.currentChanged.connect(self._tab_changed)
        self.details = DetailsPane(self)
        self.agents.job_selected.connect(self.details.show_job)
        middle = QSplitter(Qt.Orientation.Vertical, self)
        middle.setObjectName("tabs-and-details")  # remembered by name (``remembered``)
        middle.addWidget(self.tabs)
        middle.addWidget(self.details)
        middle.setSizes([520, 200])
        outer = QSplitter(Qt.Orientation.Horizontal, self)
        outer.setObjectName("sidebar-and-tabs")
        outer.addWidget(self.sidebar)
        outer.addWidget(middle)
        outer.setSizes([220, 980])
        self.setCentralWidget(outer)
        self._toolbar()
        self.status = QLabel("", self)
        self.statusBar().addPermanentWidget(self.status)
        self.cap_status = cap_status.install(self)  # "Cap 84 Mbit/s (10 MiB/s) · none from 18:00"

    def _toolbar(self) -> None:
        self.actions_by_name: dict[str, QAction] = build_actions(self)
        self.refresh_icons()

    def show_details(self, shown: bool) -> None:
        """The details pane, shown or hidden (View → Details pane, Ctrl+D)."""
        self._tab_changed(self.tabs.currentIndex())

    def follow_system_theme(self, *_) -> None:
        """The desktop switched between light and dark: follow it, unless Settings fixed a theme."""
        if self.settings.get("theme", "system") == "system":
            apply_theme("system")
            self.refresh_icons()

    def refresh_icons(self) -> None:
        """Every action's icon, drawn again in the palette's colours (after a theme change), and the plots."""
        for name, action in self.actions_by_name.items():
            action.setIcon(icon(ACTIONS[name]))
        if hasattr(self, "benchmarks"):
            self.benchmarks.follow_palette()
        self.queue_model.refresh_icons()

    # -- engine facts coming in ----------------------------------------------------------------
    def _all_jobs(self, jobs: list[JobView]) -> None:
        self.queue_model.reset(jobs)
        self.seeding.update_jobs({view.id: view for view in jobs})

    def _jobs_changed(self, changed: dict[int, JobView]) -> None:
        self.queue_model.apply(changed)
        self.seeding.update_jobs(changed)
        selected = self.selected_views()
        if selected and selected[0].id in changed:
            self.details.show_job(changed[selected[0].id])
        running = [v for v in self.queue_model.views() if v.state.active]
        total = sum(v.rate for v in running)
        text = f"{len(running)} running · {format_rate(total)}" if running else "idle"
        self.status.setText(text)
        if self.tray:
            self.tray.setToolTip(f"Ferry — {text}")

    def _job_finished(self, view: JobView) -> None:
        self.history_model.refresh()
        self.accession_finished(view)
        self.files.job_finished(view)
        title = {JobState.DONE: "Transfer finished", JobState.FAILED: "Transfer failed"}.get(view.state)
        if title:
            self.notify(title, view.error or view.dest)

    def _show_error(self, message: str) -> None:
        """Say it without stopping the window: the box is window-modal but does not block the event loop."""
        message = for_window(message)
        log.info("shown to the user: %s", message)
        box = QMessageBox(QMessageBox.Icon.Warning, "Ferry", message, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        self.last_error = message

    # -- actions ---------------------------------------------------------------------------------
    def selected_views(self) -> list[JobView]:
        return selected_views(self.queue_view)

    def _selection_changed(self, *args) -> None:
        views = self.selected_views()
        self.details.show_job(views[0] if views else None)

    def _queue_menu(self, position) -> None:
        menu = queue_menu(self, position)
        if menu is not None:
            self.last_menu = menu  # kept while it is open (and for the tests, which read it)
            menu.popup(self.queue_view.viewport().mapToGlobal(position))

    def _each_selected(self, verb: str) -> None:
        for view in self.selected_views():
            self.bridge.call(verb, view.id)

    def _move(self, offset: int) -> None:
        views = self.selected_views()
        if views:
            self.bridge.call("move", views[0].id, offset, done=lambda _: self.bridge.call(
                "jobs", done=lambda jobs: self._reset_keep_selection(jobs, views[0].id)))

    def _reset_keep_selection(self, jobs: list[JobView], job_id: int) -> None:
        self.queue_model.reset(jobs)
        row = self.queue_model.row_of(job_id)
        if row is not None:
            self.queue_view.selectionModel().select(
                self.queue_model.index(row, 0),
                QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)

    def clear_finished(self) -> None:
        for view in self.queue_model.views():
            if view.state in (JobState.DONE, JobState.CANCELLED):
                self.bridge.call("remove", view.id)

    def submit(self, source: str, dest: str, **chosen) -> None:
        """Queue one transfer through the front door (``app.requests``); ``site:NAME/…`` on either side uses
        that site's profile, and ``chosen`` holds what the user picked for this one (``Overrides`` fields)."""
        try:
            with Store(self.db_path) as store:
                request = resolve(source, dest, Overrides(**{k: v for k, v in chosen.items() if v is not None}),
                                  store=store, defaults=Defaults.from_settings(self.settings))
        except TransferError as exc:
            self._show_error(str(exc))
            return
        self.bridge.call("submit", *request.submit_args())

    def new_transfer(self, source: str = "", more: list[str] | tuple = ()) -> None:
        """The New transfer dialog (``source`` filled in); ``more``: further sources (a pasted list) that go to
        the same place with the same choices once the dialog is accepted."""
        sites = self._sites()
        dialog = NewTransferDialog(self, source, start_folder(self.settings), sites, browse=self.browse_site)
        if more:
            dialog.setWindowTitle(f"New transfer ({counted(len(more) + 1, 'item')} from the clipboard)")
        if dialog.exec():
            values = dialog.values()
            if accessions_in(values["source"]):  # an accession in the source box: what it resolves to, first
                self.public_data(values["source"], values["dest"])
                return
            if values["on"]:  # the whole job on that site's agent, SRC and DEST as its host sees them
                self.run_on_agent(values)
                return
            copy = values["what"] == "copy"
            via = self.relay_choice(values) if copy else {}
            note_folder(self, values["dest"])
            for item in [values["source"], *more]:
                self.submit(item, values["dest"], streams=values["streams"], checksum=values["checksum"],
                            limit_rate=values["limit_rate"], **values["existing"],
                            **(via if copy else what_overrides(values["what"], item)))

    def fetch_torrent(self, torrent: str, folder: str, peer: str | None = None) -> None:
        """A .torrent or magnet link: ask which peer holds it (blank: its web seeds, trackers and the DHT)."""
        if peer is None:
            peer, ok = QInputDialog.getText(self, "Fetch with BitTorrent", "Peer to fetch from (host:port), or leave "
                                            "blank to use the torrent's web seeds, trackers and the DHT:")
            if not ok:
                return
        extra = {"peers": [peer.strip()]} if peer.strip() else {"discovery": True}
        self.submit(torrent, folder, backend_options=extra)

    def open_preflight(self) -> None:
        """The preflight wizard (modeless: transfers go on while it measures)."""
        from .preflight_wizard import PreflightWizard

        if getattr(self, "preflight_wizard", None) is not None:
            self.preflight_wizard.close()
        self.preflight_wizard = PreflightWizard(self.bridge, self.db_path, self._sites(), self)
        self.preflight_wizard.site_changed.connect(lambda _: self.refresh_sites())
        self.preflight_wizard.show()

    # -- settings ----------------------------------------------------------------------------------
    def _load_settings(self) -> dict:
        with Store(self.db_path) as store:
            return store.settings.all()

    def edit_settings(self) -> None:
        dialog = SettingsDialog(self.settings, self.data_folder, self)
        if dialog.exec():
            self.settings = dialog.values()
            with Store(self.db_path) as store:
                for key, value in self.settings.items():
                    store.settings.set(key, value)
            self.engine.set_max_jobs(int(self.settings["max_jobs"]))
            self.cap_status.refresh()
            apply_theme(self.settings["theme"])
            self.refresh_icons()

    # -- history and benchmarks ----------------------------------------------------------------------
    def _benchmark_rows(self) -> list[dict]:
        with Store(self.db_path, readonly=True) as store:
            rows, sites = store.benchmarks.for_plots(limit=2000), store.sites.all()
        return [r | {"site": site_of(r.get("source") if "://" in (r.get("source") or "") else r.get("dest") or "",
                                     sites)} for r in rows]

    def _tab_changed(self, index: int) -> None:
        page = self.tabs.widget(index)
        if page is self.benchmarks:
            self.benchmarks.refresh()
        if page is self.agents:  # the details pane follows the tab's own selection
            self.details.show_job(self.agents.selected())
        # the details of a selected transfer belong to the tabs that list transfers: the Files panes, the plots
        # and the seeds take the whole height (unless View → Details pane hid it everywhere)
        wanted = getattr(self, "details_action", None)
        self.details.setVisible(page in (self.queue_view, self.history_page, self.agents)
                                and (wanted is None or wanted.isChecked()))

    # -- closing ---------------------------------------------------------------------------------------
    def show_normal(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def quit_for_real(self) -> None:
        self._really_quit = True
        self.close()

    def quit_asking(self) -> None:
        """File → Quit, Ctrl+Q and the tray's Quit: the close button's question first (``asking``)."""
        if leaving_choice(self, offer_tray=False) == "quit":
            self.quit_for_real()

    def closeEvent(self, event) -> None:
        choice = "quit" if self._really_quit else leaving_choice(self, offer_tray=True)
        if choice != "quit":
            if choice == "tray":
                self.hide()
            event.ignore()
            return
        remember(self)
        self.agents.stop()
        self.bridge.close()
        if self.tray:
            self.tray.hide()
        event.accept()
