#!/usr/bin/env python3
"""Render the real window's main views into docs/screenshots/ (``make screenshots``, under Xvfb).

The data is real: a local nginx serves a few files, the window downloads them (one fails
on purpose, so the details pane shows an error with its remedy), and a site profile is saved.
"""

from __future__ import annotations

import os
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
    window.resize(1280, 780)
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
    window.tabs.setCurrentIndex(1)
    window.apply_history_filter()
    wait(lambda: False, 0.5)
    window.grab().save(str(OUT / "history.png"))
    window.tabs.setCurrentIndex(2)
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
    QTimer.singleShot(0, lambda: None)
    window._really_quit = True
    window.close()
    engine.close()
    server.stop()
    print(f"screenshots in {OUT}: {', '.join(sorted(p.name for p in OUT.glob('*.png')))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
