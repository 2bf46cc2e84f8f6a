"""The Agents tab: the queue of Ferry's agent on a site's host (a DTN), live, with pause, resume and cancel.

Pick an SSH site: the tab reaches its host's agent over the site's own SSH login (``app.agent.watch``, a thread:
the window never waits on the round trip) and shows its jobs as the Queue shows local ones. A site once opened
here, or sent a job, stays watched while the window is open, so a remote job that ends is announced like a
local one.
"""

from __future__ import annotations

import threading
from dataclasses import fields

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.agent.watch import AgentWatch, agent_note, note_agent
from app.engine import JobState, JobView
from app.store import Store
from app.units import counted

from .queue_model import PROGRESS, ProgressDelegate, QueueModel, selected_views
from .words import for_window

SSH = ("sftp", "scp")


def view_of(job: dict) -> JobView:
    """A job as the agent told it, as the Queue's models take it."""
    known = {f.name for f in fields(JobView)}
    values = {k: v for k, v in job.items() if k in known}
    values["state"] = JobState(job["state"])
    values["notes"] = tuple(job.get("notes") or ())
    return JobView(**values)


def agent_command(db_path, site_name: str) -> str:
    with Store(db_path) as store:
        return (agent_note(store, site_name) or {}).get("command") or "labferry"


class AgentsTab(QWidget):
    jobs_arrived = Signal(str, list)  # site name, job dicts (from a watch's thread)
    failed = Signal(str, str)  # site name, sentence
    reached = Signal(str, str)  # site name, the agent's version
    remote_finished = Signal(str, object)  # site name, JobView: a remote job ended while the window was open
    job_selected = Signal(object)  # the JobView selected in the table (or None), for the details pane

    def __init__(self, sites, db_path, parent=None) -> None:
        super().__init__(parent)
        self._sites, self.db_path = sites, db_path
        self.watches: dict[str, AgentWatch] = {}
        self._states: dict[str, dict[int, JobState]] = {}
        self.site = QComboBox(self)
        self.command = QLineEdit(self)
        self.command.setPlaceholderText("labferry")
        self.command.setToolTip("How Ferry is started on that host (a path when it is not on the PATH there)")
        self.state = QLabel("Choose an SSH site whose host runs Ferry's agent.", self)
        self.state.setWordWrap(True)
        self.model = QueueModel(self)
        self.table = QTableView(self)
        self.table.setTabKeyNavigation(False)  # Tab moves on to the next control
        self.table.setModel(self.model)
        self.table.setItemDelegateForColumn(PROGRESS, ProgressDelegate(self.table))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        self.table.selectionModel().selectionChanged.connect(lambda *_: self.job_selected.emit(self.selected()))
        top = QHBoxLayout()
        top.addWidget(QLabel("Site:", self))
        top.addWidget(self.site, 1)
        top.addWidget(QLabel("Ferry there:", self))
        top.addWidget(self.command, 1)
        buttons = QHBoxLayout()
        self.buttons = {}
        for verb in ("pause", "resume", "cancel"):
            button = QPushButton(verb.capitalize(), self)
            button.clicked.connect(lambda _=False, v=verb: self._each_selected(v))
            buttons.addWidget(button)
            self.buttons[verb] = button
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.state)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self.jobs_arrived.connect(self._jobs)
        self.failed.connect(self._failed)
        self.reached.connect(self._reached)
        self.site.activated.connect(lambda _: self.open(self.site.currentText()))
        self.command.editingFinished.connect(self._command_changed)
        self.refresh_sites()

    # -- sites --------------------------------------------------------------------------------
    def refresh_sites(self) -> None:
        current = self.site.currentText()
        self.site.clear()
        for site in self._ssh_sites():
            self.site.addItem(site.name)
        if current:
            self.site.setCurrentText(current)

    def _ssh_sites(self):
        return [s for s in self._sites() if s.protocol in SSH]

    def open(self, name: str) -> None:
        """Show (and keep watching) the agent of site ``name``."""
        if not name:
            return
        self.site.setCurrentText(name)
        self.command.setText(agent_command(self.db_path, name))
        self.model.here = f"{name}'s host"
        self.model.reset([])
        self.state.setText(f"Reaching the agent on {name}…")
        self.watch(name)

    def watch(self, name: str) -> AgentWatch:
        if name not in self.watches:
            site = next(s for s in self._ssh_sites() if s.name == name)
            self.watches[name] = AgentWatch(
                site, agent_command(self.db_path, name), on_jobs=lambda jobs: self.jobs_arrived.emit(name, jobs),
                on_error=lambda sentence: self.failed.emit(name, sentence),
                on_reached=lambda version: self.reached.emit(name, version), db_path=self.db_path)
        return self.watches[name]

    def _command_changed(self) -> None:
        name = self.site.currentText()
        command = self.command.text().strip() or "labferry"
        if not name or command == agent_command(self.db_path, name):
            return
        with Store(self.db_path) as store:
            note = agent_note(store, name) or {}
            store.settings.set(f"agent.{name}", note | {"command": command})
        old = self.watches.pop(name, None)
        if old:
            old.stop()
        self.open(name)

    # -- what the watches say -------------------------------------------------------------------
    def _jobs(self, name: str, jobs: list) -> None:
        views = [view_of(j) for j in jobs]
        before = self._states.get(name)
        self._states[name] = {v.id: v.state for v in views}
        if before is not None:
            for view in views:
                was = before.get(view.id)
                if was is not None and not was.terminal and view.state.terminal:
                    self.remote_finished.emit(name, view)
        if name != self.site.currentText():
            return
        chosen = self.selected()
        gone = {v.id for v in self.model.views()} - set(self._states[name])
        for job_id in gone:  # removed on the agent
            self.model.remove(job_id)
        self.model.apply({v.id: v for v in views})
        if chosen is not None:
            self.job_selected.emit(next((v for v in views if v.id == chosen.id), None))
        running = sum(v.state.active for v in views)
        self.state.setText(f"The agent on {name} runs: {counted(len(views), 'job')}, {running} running.")

    def _failed(self, name: str, sentence: str) -> None:
        if name == self.site.currentText():
            self.state.setText(sentence)

    def _reached(self, name: str, version: str) -> None:
        if name == self.site.currentText():
            self.state.setText(f"Connected to the agent on {name} (Ferry {version}).")

    # -- actions ---------------------------------------------------------------------------------
    def selected(self) -> JobView | None:
        views = selected_views(self.table)
        return views[0] if views else None

    def _each_selected(self, verb: str) -> None:
        name = self.site.currentText()
        jobs = [v.id for v in selected_views(self.table)]
        if name and jobs:
            self._in_thread(name, lambda watch: [watch.call(verb, job=j) for j in jobs])

    def submit_on(self, name: str, source: str, dest: str, overrides: dict) -> None:
        """A job that runs entirely on the agent of site ``name`` (SRC and DEST as its host sees them)."""
        self._in_thread(name, lambda watch: watch.call("submit", source=source, dest=dest, overrides=overrides))
        self.open(name)

    def _in_thread(self, name: str, work) -> None:
        watch = self.watch(name)

        def run() -> None:
            try:
                work(watch)
            except Exception as exc:  # a sentence for the user, from the agent or the link
                self.failed.emit(name, str(exc))

        threading.Thread(target=run, daemon=True).start()

    def stop(self) -> None:
        for watch in self.watches.values():
            watch.stop()
        self.watches.clear()


class RemoteJobs:
    """The main window's part in agents' jobs: New transfer's "Run on" and "Send" choices, and notifications of
    remote jobs that end (a mixin of ``MainWindow``)."""

    def run_on_agent(self, values: dict) -> None:
        from app.requests import Overrides, overrides_to_wire

        chosen = Overrides(streams=values["streams"], checksum=values["checksum"], limit_rate=values["limit_rate"],
                           **values["existing"])
        self.agents.submit_on(values["on"], values["source"], values["dest"], overrides_to_wire(chosen))
        self.tabs.setCurrentWidget(self.agents)

    def relay_choice(self, values: dict) -> dict:
        """The ``Overrides`` fields of a relayed transfer (none for a direct one)."""
        if not values["via"]:
            return {}
        return {"via": f"site:{values['via']}", "agent_command": agent_command(self.db_path, values["via"])}

    def _remote_finished(self, site: str, view: JobView) -> None:
        title = {JobState.DONE: f"Finished on {site}", JobState.FAILED: f"Failed on {site}"}.get(view.state)
        if title:
            self.notify(title, view.error or view.dest)

    def notify(self, title: str, text: str) -> None:
        """A desktop notification (the tray's), or the status bar where there is no tray."""
        text = for_window(text)
        self.last_notice = (title, text)
        if not self.settings.get("notifications", True):
            return
        if self.tray:
            self.tray.showMessage(title, text, self.windowIcon(), 8000)
        else:
            self.statusBar().showMessage(f"{title}: {text}", 8000)


__all__ = ["AgentsTab", "RemoteJobs", "agent_note", "note_agent", "view_of"]
