#!/usr/bin/env python3
"""The Files tab stays responsive: the worst GUI event-loop stall while a site's pane lists 10,000 entries over an
emulated long fat network, and while it lists them during a full-speed transfer on the same path.

Needs root and ``../shared/tools/wanem``; sshd, ssh, sftp. A stock sshd on host b holds a folder of 10,000
files and a file to fetch; the real window (Qt offscreen, a fresh data folder) runs on host a with a site for
that sshd. A QTimer beats every 10 ms on the GUI thread; a stall is how much later than 10 ms a beat came. Each
round lists the folder in the right-hand pane (time to the first rows, to all of them); then the file is fetched
through the window's front door while the pane lists the folder again and again. OpenSSH's ``sftp`` listing
the same folder (``ls -l``, batch mode) is the peer for the listing time. The fetched file's SHA-256 is
compared with the server's.

    sudo .venv/bin/python tests/bench/pane_wan.py --rtt 50 --loss 0 --rate 1000 --size 1G [--jitter 0] \\
        [--rounds 3] [--json] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

NET = 93
ENTRIES = 10_000


def child(args: argparse.Namespace) -> int:
    """Runs on host a: the window, its heartbeat, the listings and the transfer; one JSON line per measure."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    from app.sites import Site, SiteBook
    from app.store import Store
    from app.ui.app import build

    with Store() as store:
        SiteBook(store).save(Site("lab", "sftp", args.host, args.port, args.user, args.folder, "auto", args.key,
                                  {"known_hosts": args.known_hosts}))
    app, engine, window = build([])
    window.settings["download_folder"] = args.out
    window.show()
    window.refresh_sites()
    window.tabs.setCurrentWidget(window.files)
    pane = window.files.right
    gaps: list[float] = []
    beat = QElapsedTimer()
    heartbeat = QTimer()
    heartbeat.setInterval(10)
    heartbeat.timeout.connect(lambda: gaps.append(beat.restart()))

    if args.trace_stalls:  # where the GUI thread was whenever a beat is late: printed to stderr
        import threading
        import traceback

        main_id = threading.main_thread().ident
        last = [time.perf_counter()]
        heartbeat.timeout.connect(lambda: last.__setitem__(0, time.perf_counter()))

        def watch() -> None:
            while True:
                time.sleep(0.01)
                if gaps and time.perf_counter() - last[0] > args.trace_stalls_ms / 1000 and heartbeat.isActive():
                    frames = sys._current_frames()
                    others = "; ".join(f"{t}: " + " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(
                        traceback.extract_stack(frame, limit=4))) for t, frame in frames.items() if t != main_id)
                    print("LATE", round(time.perf_counter() - last[0], 3), " <- ".join(
                        f"{f.filename.rsplit('/', 1)[-1]}:{f.name}:{f.lineno}" for f in reversed(
                            traceback.extract_stack(frames.get(main_id), limit=7))), "|| OTHERS", others,
                          file=sys.stderr, flush=True)

        threading.Thread(target=watch, daemon=True).start()

    def wait(condition, timeout: float = 600) -> None:
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > end:
                raise TimeoutError("the pane or the transfer did not finish")
            app.processEvents()
            time.sleep(0.001)

    def listing() -> dict:
        began = time.perf_counter()
        first: list[float] = []

        def shown(*_) -> None:
            if not first:
                first.append(time.perf_counter() - began)

        pane.model.rowsInserted.connect(shown)
        pane.show_site(next(s for s in window._sites() if s.name == "lab"), "many")
        wait(lambda: not pane.listing)
        whole = time.perf_counter() - began
        pane.model.rowsInserted.disconnect(shown)
        return {"entries": len(pane.model.entries), "first_rows_s": round(first[0], 3) if first else None,
                "all_rows_s": round(whole, 3), "status": pane.status.text()}

    def stalls() -> float:
        found = gaps[1:]
        return round(max(found) - 10, 1) if found else float("nan")

    wait(lambda: not pane.listing)  # the first site's folder, opened with the tab
    for r in range(args.rounds):
        gaps.clear()
        beat.start()
        heartbeat.start()
        row = listing()
        heartbeat.stop()
        print(json.dumps({"measure": "listing", "round": r + 1, "worst_stall_ms": stalls(), **row}), flush=True)

    for listing_meanwhile in (False, True):  # the transfer alone, then with the pane listing again and again
        gaps.clear()
        beat.start()
        heartbeat.start()
        began = time.perf_counter()
        window.submit(f"site:lab/{args.file}", args.out, overwrite=True)
        wait(lambda: window.queue_model.views() and not window.queue_model.views()[-1].state.terminal, 60)
        lists = []
        while True:
            views = window.queue_model.views()
            if views and views[-1].state.terminal:
                break
            if listing_meanwhile:
                lists.append(listing())
            else:
                app.processEvents()
                time.sleep(0.001)
        spent = time.perf_counter() - began
        heartbeat.stop()
        view = window.queue_model.views()[-1]
        print(json.dumps({"measure": "transfer", "listing": listing_meanwhile, "state": view.state.value,
                          "seconds": round(spent, 2), "mbps": round(args.size * 8 / spent / 1e6, 1),
                          "listings_meanwhile": len(lists), "worst_stall_ms": stalls(), "ticks": len(gaps)}),
              flush=True)
        window.bridge.call("remove", view.id)
        wait(lambda: not window.queue_model.views(), 30)
    window._really_quit = True
    window.close()
    engine.close()
    QApplication.processEvents()
    sys.stdout.flush()
    os._exit(0)  # the figures are out: no interpreter teardown under a live Qt (it crashed once with the tracer)


def sftp_listing(ns: list[str], server, host: str, folder: str) -> float:
    began = time.perf_counter()
    subprocess.run([*ns, "sftp", "-q", "-b", "-", "-i", str(server.key), "-o",
                    f"UserKnownHostsFile={server.known_hosts}", "-P", str(server.port), f"{server.user}@{host}"],
                   input=f"ls -l {folder}\n", text=True, capture_output=True, check=True)
    return time.perf_counter() - began


def main() -> int:
    from tests.bench.report import link_down, link_up, on_host, path_arguments, prepare_path, replace_section

    parser = path_arguments(__doc__, rtt=50, loss=0, work="/tmp/ferry-bench-pane")
    parser.set_defaults(size="1G,4G")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("host", "user", "folder", "key", "known-hosts", "file", "out"):
        parser.add_argument(f"--{name}")
    parser.add_argument("--port", type=int)
    parser.add_argument("--trace-stalls", action="store_true", help="print where the GUI thread was when late")
    parser.add_argument("--trace-stalls-ms", type=float, default=40)
    parser.add_argument("--server-nice", type=int, default=0, help="run the server at this nice level")
    args = parser.parse_args()
    if args.child:
        args.size = int(args.size)
        return child(args)
    prepared = prepare_path(args)
    if prepared is None:
        return 2
    work, sizes = prepared
    from backends.streams.hashing import hash_file
    from tests.bench.https_wan import make_file
    from tests.servers.sshd import Sshd

    link = f"pn{NET}"
    link_up(link, NET, args)
    host = f"198.18.{NET}.2"
    # --server-nice: the server's processes (sshd, its ssh sessions' ciphers, sftp-server) at a lower CPU priority,
    # as a server on another machine takes none of this one's two cores
    niced = ("nice", "-n", str(args.server_nice)) if args.server_nice else ()
    server = Sshd(work / "sshd", listen=host).start(argv_prefix=(*on_host(link, "b"), *niced))
    rows: list[dict] = []
    try:
        many = server.home / "many"
        many.mkdir(exist_ok=True)
        for i in range(ENTRIES):
            (many / f"sample_{i:05d}_R1.fastq.gz").touch()
        server.give(server.home)
        out = work / "out"
        out.mkdir(exist_ok=True)
        env = dict(os.environ, LABFERRY_HOME=str(work / "home"))
        peers = [sftp_listing(on_host(link, "a"), server, host, str(many)) for _ in range(args.rounds)]
        trace = ["--trace-stalls", "--trace-stalls-ms", str(args.trace_stalls_ms)] if args.trace_stalls else []
        for size in sizes:  # a window of its own per file size: the listing rounds, then the two fetches
            name = f"big-{size // (1024 * 1024)}M.bin"
            make_file(server.home / name, size)
            server.give(server.home / name)
            digest = hash_file(server.home / name)["sha256"]
            proc = subprocess.run([*on_host(link, "a"), sys.executable, __file__, "--child", "--host", host,
                                   "--port", str(server.port), "--user", server.user, "--folder", str(server.home),
                                   "--key", str(server.key), "--known-hosts", str(server.known_hosts), "--file",
                                   name, "--out", str(out), "--size", str(size), "--rounds", str(args.rounds),
                                   *trace], capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)
            found = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
            if args.trace_stalls:
                print(proc.stderr[-20000:], file=sys.stderr)
            if proc.returncode != 0 or not found:
                print(proc.stdout, proc.stderr[:6000], proc.stderr[-3000:], sep="\n", file=sys.stderr)
                return 1
            fetched = hash_file(out / name)["sha256"] == digest
            (out / name).unlink()
            for row in found:
                row |= {"size_mib": size // (1024 * 1024), "rtt_ms": args.rtt, "loss": args.loss,
                        "rate_mbps": args.rate, "jitter_ms": args.jitter}
                if row["measure"] == "transfer":
                    row |= {"sha256_ok": fetched, "link_share": round(row["mbps"] / args.rate, 3)}
                print(json.dumps(row) if args.json else row, flush=True)
            rows += found
    finally:
        server.stop()
        link_down(link)
    listings = [r for r in rows if r["measure"] == "listing"]
    ferry_list = statistics.median(r["all_rows_s"] for r in listings)
    peer_list = statistics.median(peers)
    matched = all(r["sha256_ok"] for r in rows if "sha256_ok" in r)
    transfers = []
    for size in sizes:
        mib = size // (1024 * 1024)
        for row in (r for r in rows if r["measure"] == "transfer" and r["size_mib"] == mib):
            what = (f"the pane listing {row['listings_meanwhile']} times meanwhile" if row["listing"]
                    else "the pane idle")
            transfers.append(f"| worst stall during a {mib} MiB fetch at {row['mbps']:.0f} Mbit/s "
                             f"({row['mbps'] / args.rate:.0%} of the link), {what} | {row['worst_stall_ms']} ms | "
                             "| ≤ 50 ms |")
    text = "\n".join([
        "## Folder panes on an emulated long fat network",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine with `wanem` ({args.rtt:g} ms, loss "
        f"{args.loss:g}, {args.rate} Mbit/s, jitter {args.jitter:g} ms): a stock sshd on host b, the real window "
        "(Qt offscreen) on host a, a QTimer beating every 10 ms on the GUI thread; a stall is how much later than "
        f"10 ms a beat came. {args.rounds} listing rounds per window, a window per file size.",
        "",
        "| measure | Ferry | peer | target |",
        "|---|---|---|---|",
        f"| worst stall while the pane lists {ENTRIES:,} entries (each round) | "
        f"{' / '.join(str(r['worst_stall_ms']) for r in listings)} ms | | ≤ 50 ms |",
        f"| first rows shown / all {ENTRIES:,} rows shown (median) | "
        f"{statistics.median(r['first_rows_s'] for r in listings):.2f} s / {ferry_list:.2f} s | OpenSSH `sftp` "
        f"`ls -l`: {peer_list:.2f} s ({peer_list / ferry_list:.1f}× Ferry's time) | |",
        *transfers,
        f"| fetched files' SHA-256 | {'all matched' if matched else '**MISMATCH**'} | | |",
        "",
        f"Reproduce: `sudo .venv/bin/python tests/bench/pane_wan.py --rtt {args.rtt:g} --loss {args.loss:g} --rate "
        f"{args.rate} --size {args.size} --rounds {args.rounds} --write docs/benchmarks.md`",
        "",
    ])
    print(text)
    if args.write:
        replace_section(ROOT / args.write, "## Folder panes on an emulated long fat network", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
