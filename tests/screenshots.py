#!/usr/bin/env python3
"""Render the real window's main views into docs/screenshots/ (``make screenshots``, under Xvfb).

The data is real: a local nginx serves a few files, the window downloads them (one fails
on purpose, so the details pane shows an error with its remedy), and a site profile is saved.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="ferry-shots-"))
    os.environ["LABFERRY_HOME"] = str(work / "home")
    os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")
    os.environ["XDG_DATA_HOME"] = str(work / "xdg")
    from PySide6.QtCore import QTimer

    from app.engine import JobState
    from app.sites import Site, SiteBook
    from app.store import Store
    from app.ui.app import build
    from app.ui.dialogs import SiteDialog
    from tests.bench.https_wan import make_file
    from tests.servers.nginx import Nginx

    server = Nginx(work / "nginx", work / "data", slow_rate="8m").start()
    for name, mib in (("sample_R1.fastq.gz", 96), ("sample_R2.fastq.gz", 96), ("reference.fa", 48)):
        make_file(server.data / name, mib * 1024 * 1024)
    make_file(server.data / "cohort.bam", 512 * 1024 * 1024)
    with Store() as store:
        SiteBook(store).save(Site("genome-center", "sftp", "dtn.genome.example.org", 22, "jdoe", "/data/shared",
                                  "auto", "~/.ssh/id_ed25519", {"known_hosts": "~/.ssh/known_hosts_genome"}))
        SiteBook(store).save(Site("collab-lab", "https", "data.collab.example.edu", None, None, "/releases"))
    app, engine, window = build([])
    window.resize(1280, 720)  # the smallest size the window is made for (issue 44)
    window.settings["download_folder"] = str(work)
    window.show()
    for name in ("sample_R1.fastq.gz", "sample_R2.fastq.gz", "reference.fa"):
        window.submit(server.url(name, scheme="http"), str(work / name))
    window.submit(server.url("missing_R3.fastq.gz", scheme="http"), str(work / "missing_R3.fastq.gz"))
    OUT.mkdir(parents=True, exist_ok=True)

    def wait(predicate, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not predicate():
            app.processEvents()
            time.sleep(0.02)

    wait(lambda: sum(v.state in (JobState.DONE, JobState.FAILED) for v in window.queue_model.views()) >= 4, 120)
    window.submit(server.url("slow/cohort.bam", scheme="http"), str(work / "cohort.bam"), streams=8)
    wait(lambda: any(v.source.endswith("cohort.bam") and v.bytes_done > 100 * 2**20
                     for v in window.queue_model.views()), 60)
    wait(lambda: False, 1.0)
    failed = [v for v in window.queue_model.views() if v.state == JobState.FAILED]
    if failed:
        window.queue_view.selectRow(window.queue_model.row_of(failed[0].id))
    wait(lambda: False, 0.5)
    window.grab().save(str(OUT / "main-window.png"))
    window.resize(1024, 640)  # a small laptop: the names still first and whole (issue 55)
    wait(lambda: False, 0.5)
    window.grab().save(str(OUT / "main-window-1024.png"))
    window.resize(1280, 720)
    wait(lambda: False, 0.3)
    window.tabs.setCurrentWidget(window.history_page)
    window.apply_history_filter()
    wait(lambda: False, 0.5)
    window.grab().save(str(OUT / "history.png"))
    window.tabs.setCurrentWidget(window.benchmarks)
    wait(lambda: False, 0.5)
    window.grab().save(str(OUT / "benchmarks.png"))
    with Store() as store:
        site = SiteBook(store).get("genome-center")
    dialog = SiteDialog(window, site)
    dialog.show()
    wait(lambda: False, 0.3)
    dialog.grab().save(str(OUT / "site-dialog.png"))
    dialog.close()
    # the preflight wizard, measuring the local nginx for real (an unshaped path: the knee comes early)
    window.open_preflight()
    wizard = window.preflight_wizard
    wizard.pick.site.setCurrentText("Another address…")
    wizard.pick.url.setText(server.url("cohort.bam", scheme="http"))
    wizard.next()
    wait(lambda: wizard.measure.result is not None or wizard.measure.error is not None, 60)
    wait(lambda: False, 0.3)
    wizard.grab().save(str(OUT / "preflight-measure.png"))
    wizard.next()
    wait(lambda: False, 0.3)
    wizard.grab().save(str(OUT / "preflight-advice.png"))
    wizard.close()
    public_data(window, server, work, wait)
    seeding(window, work, wait)
    files(window, work, wait)
    agents(window, server, work, wait)
    QTimer.singleShot(0, lambda: None)
    window._really_quit = True
    window.close()
    engine.close()
    server.stop()
    print(f"screenshots in {OUT}: {', '.join(sorted(p.name for p in OUT.glob('*.png')))}")
    return 0


def public_data(window, server, work: Path, wait) -> None:
    """The Public data dialog resolving a study from a stand-in ENA portal (tests/servers/ena_portal.py), then
    its one row in the queue with its files below, fetched from the real nginx at a slow rate so some are still
    on their way."""
    import random

    from app.accessions.queued import queue_request
    from app.requests import Defaults
    from app.ui.accession_dialog import AccessionDialog
    from tests.servers.ena_portal import Portal

    portal = Portal(server.data).start()
    for i in range(4):
        run = f"ERR90770{i}"
        portal.add_run(run, experiment=f"ERX90770{i}", layout="PAIRED", sample=f"SAMEA907770{i}", study="ERP907770",
                       project="PRJEB90777", title=f"lung biopsy {i + 1}",
                       fastq=[(f"{run}_{r}.fastq.gz", random.Random(i * 2 + r).randbytes((40 + 6 * i) << 20))
                              for r in (1, 2)])
    portal.add_run("ERR907710", experiment="ERX907710", layout="SINGLE", sample="SAMEA9077710", study="ERP907770",
                   project="PRJEB90777", fastq=[], submitted=[("biopsy_5.bam", random.Random(9).randbytes(1 << 20))])
    os.environ["LABFERRY_ENA_PORTAL"] = portal.url
    os.environ["LABFERRY_NCBI_SDL"] = portal.sdl
    os.environ["LABFERRY_ENA_FILES"] = server.url("slow", scheme="http")
    dialog = AccessionDialog(window, "PRJEB90777", str(work / "PRJEB90777"))
    dialog.show()
    wait(lambda: dialog.plan is not None, 30)
    wait(lambda: False, 0.3)
    dialog.grab().save(str(OUT / "public-data.png"))
    request = queue_request(dialog.plan, dialog.folder, defaults=Defaults.from_settings(window.settings))
    dialog.close()
    window.tabs.setCurrentWidget(window.queue_view)
    window.bridge.call("submit", *request.submit_args())
    row = lambda: next((v for v in window.queue_model.views() if v.source == "ena:PRJEB90777"), None)  # noqa: E731
    wait(lambda: row() is not None and sum(s == "fetched" for s, *_ in row().files.values()) >= 2, 60)
    window.queue_view.selectRow(window.queue_model.row_of(row().id))
    middle = window.details.parentWidget()
    if hasattr(middle, "setSizes"):  # the files below the row: give the details pane the room
        middle.setSizes([260, 460])
    wait(lambda: False, 0.5)
    window.grab().save(str(OUT / "public-data-queue.png"))
    # the study is shared as a torrent next: every file must be whole first (a torrent of files still being
    # written is hashed over what was there, and its seed then serves pieces that fail the fetcher's checks)
    wait(lambda: all(v.state.terminal for v in window.queue_model.views() if "PRJEB90777" in v.dest), 300)
    portal.stop()


def seeding(window, work: Path, wait) -> None:
    """The Create torrent dialog on the study just fetched, then the Seeding tab once another Ferry process has
    fetched it from this window's seed."""
    import subprocess

    from app.ui.torrents import CreateTorrentDialog
    from tests.servers.nginx import free_port

    port = free_port()
    dialog = CreateTorrentDialog(window, str(work / "PRJEB90777"))
    dialog.web_seeds.setPlainText("https://data.lab.example.org/PRJEB90777/")
    dialog.listen.setText(f"127.0.0.1:{port}")
    dialog.show()
    wait(lambda: False, 0.3)
    dialog.grab().save(str(OUT / "create-torrent.png"))
    dialog.web_seeds.clear()
    dialog.create_button.click()
    wait(lambda: dialog.torrent is not None, 120)
    window.submit(str(dialog.torrent), str(work / "PRJEB90777"), backend_options={
        "seed": True, "listen": f"127.0.0.1:{port}", "connections": 8, "encryption": "required"})
    dialog.close()
    wait(lambda: any(v.state.active for v in window.seeding.views.values()), 30)
    env = dict(os.environ, LABFERRY_HOME=str(work / "other-lab"))
    other = subprocess.Popen([sys.executable, "-m", "app", "copy", str(dialog.torrent), f"{work / 'other-lab-data'}/",
                              "--peer", f"127.0.0.1:{port}", "-q"], env=env)
    wait(lambda: other.poll() is not None, 120)
    for view in window.seeding.views.values():
        if view.error:
            print(f"the seed failed: {view.error}", file=sys.stderr)
    if other.poll() is None:
        other.kill()
    window.tabs.setCurrentWidget(window.seeding)
    window.seeding.table.resizeColumnsToContents()
    window.seeding.table.selectRow(0)
    wait(lambda: False, 1.0)
    window.grab().save(str(OUT / "seeding.png"))


def files(window, work: Path, wait) -> None:
    """The Files tab: this computer on the left, a real sshd's folder on the right (sizes from sparse files), a
    selection, then the confirmation a remote delete asks for, grabbed from the screen with the window."""
    from PySide6.QtGui import QGuiApplication

    import app.ui.folder_actions as actions
    from app.sites import Site, SiteBook
    from app.store import Store
    from tests.servers.sshd import Sshd

    os.chmod(work, 0o755)  # the server's test user reaches its home and keys below it
    sshd = Sshd(work / "sshd").start()
    project = sshd.home / "projects" / "lung-atlas"
    for run in ("run_2026_11_02", "run_2026_11_09", "run_2026_11_16"):
        (project / run).mkdir(parents=True)
    for i in range(1, 7):
        for read in (1, 2):
            with open(project / f"LA{i:03d}_S{i}_L001_R{read}_001.fastq.gz", "wb") as fh:
                fh.truncate((9 + 3 * i + read) * 2**30 // 4)
    (project / "samplesheet.csv").write_text("sample,fastq_1,fastq_2\n" * 7)
    (project / "README.txt").write_text("Lung atlas, batch 3\n")
    sshd.give(sshd.home)
    local = work / "analysis"
    for name in ("qc", "alignments", "notebooks"):
        (local / name).mkdir(parents=True)
    (local / "cohort.bam").write_bytes(b"\0" * 4096)
    (local / "notes.md").write_text("# analysis\n")
    with Store() as store:
        SiteBook(store).save(Site("sequencing-core", "sftp", "127.0.0.1", sshd.port, sshd.user, str(project),
                                  "auto", str(sshd.key), {"known_hosts": str(sshd.known_hosts)}))
    window.refresh_sites()
    window.tabs.setCurrentWidget(window.files)
    left, right = window.files.panes()
    left.load(str(local))
    right.show_site(next(s for s in window._sites() if s.name == "sequencing-core"))
    wait(lambda: not right.listing and not left.listing, 30)
    for row in range(2, 6):
        right.view.selectionModel().select(right.model.index(row, 0), right.view.selectionModel().SelectionFlag.Select
                                           | right.view.selectionModel().SelectionFlag.Rows)
    for pane in (left, right):
        pane.view.resizeColumnToContents(0)
    wait(lambda: False, 0.5)
    window.grab().save(str(OUT / "files.png"))

    def confirm(parent, title, question):
        from PySide6.QtWidgets import QMessageBox

        box = QMessageBox(QMessageBox.Icon.Question, title, question,
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, parent)
        box.show()
        wait(lambda: False, 0.5)
        area = window.frameGeometry()
        QGuiApplication.primaryScreen().grabWindow(0, area.x(), area.y(), area.width(), area.height()).save(
            str(OUT / "files-delete.png"))
        box.close()
        return False

    right.view.selectionModel().clearSelection()
    right.view.selectionModel().select(right.model.index(0, 0), right.view.selectionModel().SelectionFlag.Select
                                       | right.view.selectionModel().SelectionFlag.Rows)
    actions.confirm, saved = confirm, actions.confirm
    try:
        right.actions_by_name["delete"].trigger()
    finally:
        actions.confirm = saved
    sshd.stop()


def agents(window, server, work: Path, wait) -> None:
    """The Agents tab: a real agent behind a real sshd (its own data folder, as on a DTN) running jobs from the
    slow nginx: one done, one running, one paused."""
    import getpass

    from app.sites import Site, SiteBook
    from app.store import Store
    from tests.servers.agent import ferry_command
    from tests.servers.sshd import Sshd

    sshd = Sshd(work / "sshd-dtn", user=getpass.getuser()).start()
    home = work / "dtn-home"
    command = ferry_command(work / "ferry-on-dtn", home)
    with Store() as store:
        SiteBook(store).save(Site("lab-dtn", "sftp", "127.0.0.1", sshd.port, sshd.user, str(work), "auto",
                                  str(sshd.key), {"known_hosts": str(sshd.known_hosts)}))
        store.settings.set("agent.lab-dtn", {"command": str(command)})
    window.refresh_sites()
    storage = work / "dtn-storage"
    storage.mkdir()
    tab = window.agents
    for name, rate in (("reference.fa", None), ("slow/cohort.bam", 6 * 2**20), ("sample_R1.fastq.gz", 2**20)):
        overrides = {"limit_rate": rate} if rate else {}
        tab.submit_on("lab-dtn", server.url(name, scheme="http"), f"{storage}/", overrides)
        wait(lambda: False, 1.5)
    window.tabs.setCurrentWidget(tab)
    wait(lambda: sum(v.state.value in ("running", "done") for v in tab.model.views()) >= 3, 60)
    last = max(v.id for v in tab.model.views())
    tab.table.selectRow(tab.model.row_of(last))
    tab.buttons["pause"].click()
    wait(lambda: any(v.id == last and v.state.value == "paused" for v in tab.model.views()), 20)
    wait(lambda: False, 2.0)
    window.grab().save(str(OUT / "agents.png"))
    tab.stop()
    subprocess.run([sys.executable, "-m", "app", "agent", "--stop"], env=dict(os.environ, LABFERRY_HOME=str(home)),
                   capture_output=True)
    sshd.stop()


if __name__ == "__main__":
    sys.exit(main())
