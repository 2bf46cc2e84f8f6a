#!/usr/bin/env python3
"""docs/screenshots/report.png: a real HTML report (from a store filled like a busy week), shot by headless Chromium.

    make report-screenshot        (needs chromium: apt install chromium)
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def fill(store) -> None:
    rng = random.Random(7)
    now = time.time()
    tcp = json.dumps({"available": True, "congestion": "cubic", "default_qdisc": "fq_codel", "rmem_max": 212992,
                      "wmem_max": 212992, "tcp_rmem": [4096, 131072, 6291456], "tcp_wmem": [4096, 16384, 4194304]})
    sites = (("dtn.genome-center.example.org", "ssh",
              "sftp://dtn.genome-center.example.org/data/run{}/S{}_R1.fastq.gz", 48.0),
             ("files.ebi.example.org", "https", "https://files.ebi.example.org/pub/cohort/sample{}_{}.bam", 96.0))
    for i in range(8):
        host, backend, pattern, rtt = sites[i % 2]
        streams = rng.choice((4, 8, 16, 32, 64))
        rate = min(940.0, 31.0 * streams ** 0.8 * (100 / rtt)) * rng.uniform(0.85, 1.0)
        size = rng.choice((12, 24, 48, 96)) * 2**30
        started = now - (8 - i) * 43200
        failed = i == 5
        store.history.add(
            source=pattern.format(40 + i, i), dest=f"/scratch/cohort/{Path(pattern.format(40 + i, i)).name}",
            backend=backend, outcome="failed" if failed else "done", bytes=size // (7 if failed else 1),
            seconds=size * 8 / rate / 1e6, throughput_mbps=rate, streams=streams, retries=3 if failed else 0,
            sha256=None if failed else os.urandom(32).hex(), verified=0 if failed else 1,
            verify_method=None if failed else "sha256 computed by the server matched",
            error="The server closed the connection 3 times; check the site's status page." if failed else None,
            error_kind="transient" if failed else None, peer_host=host, rtt_ms=rtt, tcp=tcp,
            notes=json.dumps([f"{streams} streams for {rtt:.0f} ms"]), started=started, finished=started + 600)
        if not failed:
            store.benchmarks.add(job_id=None, backend=backend, peer_host=host, streams=streams, bytes=size,
                                 seconds=size * 8 / rate / 1e6, rtt_ms=rtt, started=started)
    store.conn.execute("INSERT INTO sites (name, protocol, host, created, updated) VALUES (?,?,?,?,?)",
                       ("genome-center", "sftp", "dtn.genome-center.example.org", now, now))


def main() -> int:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not browser:
        print("needs chromium (apt install chromium)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ferry-report-"))
    os.environ["LABFERRY_HOME"] = str(work)
    from app.reports import gather, write_report
    from app.store import Store
    from app.ui.report_pdf import renderers

    with Store() as store:
        fill(store)
        data = gather(store)
    html = write_report(data, "html", work / "report.html", **renderers())
    out = ROOT / "docs" / "screenshots" / "report.png"
    subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={out}", "--window-size=1500,3400", html.as_uri()], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
