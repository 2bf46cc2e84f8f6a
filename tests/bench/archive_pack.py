#!/usr/bin/env python3
"""Packing and unpacking a run folder: ``labferry pack``/``unpack`` beside ParFu, MPItar and dtar (MPI), GNU
tar, ``tar -I pigz`` and ``tar -I 'zstd -T0'``, on one of two generated sets:

* ``millions``: ``--files`` (300,000) files of 1-16 KiB of text in nested folders;
* ``lshaped``: ``--large`` (4) files of 1 GiB beside 30,000 small ones.

Every round drops the page cache first (root), runs each tool in turn (rounds interleaved), and checks every
file: a pack by reading the archive back with Python's tarfile and comparing each member's SHA-256 with the
source's, an unpack by hashing what landed. Medians of ``--rounds``; CPU seconds (the children's user + system)
beside the wall time, and the % of the machine's cores they kept busy. Peers come from the environment and are
said when missing: ``LABFERRY_PARFU`` (parfu_0_6_test), ``LABFERRY_MPITAR``, ``LABFERRY_DTAR`` (with
``LD_LIBRARY_PATH`` for libcircle and dtcmp), ``LABFERRY_PTGZ``. ParFu, MPItar and ptgz need 2 ranks at least;
ptgz's archive (a tar of gzip'ed tars) is checked member by member, since its own extractor crashed here.

    sudo LABFERRY_PARFU=… LABFERRY_MPITAR=… LABFERRY_DTAR=… .venv/bin/python tests/bench/archive_pack.py \\
        --set millions --ranks 1,2,4 --rounds 3 --json --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.bench.report import precompile, replace_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
HEADING = "## Packing a run folder"
SKIP = (".labferry-index", ".idx", ".dtaridx")  # the tools' own index members


def make_set(kind: str, work: Path, files: int, large: int) -> tuple[Path, dict[str, str]]:
    """The source folder (made once, kept for the next run) and every file's SHA-256."""
    folder = work / f"{kind}-{files}-{large}" / "run"
    digests_file = folder.parent / "digests.json"
    if digests_file.exists():
        return folder, json.loads(digests_file.read_text())
    rng = random.Random(42)
    digests = {}
    count = files if kind == "millions" else 30_000
    for i in range(count):
        rel = f"s{i % 30:02d}/b{i % 300:03d}/f{i:07d}.vcf"
        data = os.urandom(rng.randint(512, 8192)).hex().encode()  # text: what VCFs and logs are
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
        digests[rel] = hashlib.sha256(data).hexdigest()
    for i in range(large if kind == "lshaped" else 0):
        rel, digest = f"lane{i}.bam", hashlib.sha256()
        with open(folder / rel, "wb") as f:
            for _ in range(64):
                chunk = os.urandom(16 << 20)
                digest.update(chunk)
                f.write(chunk)
        digests[rel] = digest.hexdigest()
    digests_file.write_text(json.dumps(digests))
    return folder, digests


def peers() -> dict[str, str | None]:
    found = {name: os.environ.get(f"LABFERRY_{name.upper()}") for name in ("parfu", "mpitar", "dtar", "ptgz")}
    return {name: path if path and Path(path).exists() else None for name, path in found.items()}


def pack_commands(src: Path, out: Path, ranks: int, tools: dict) -> dict[str, tuple[list[str], Path]]:
    """tool → (argv run in the source's parent, the archive it writes)."""
    ferry = [sys.executable, "-m", "app"]
    name = src.name
    cmds = {f"ferry w{ranks}": ([*ferry, "pack", str(src), str(out / "ferry.tar"), "--workers", str(ranks), "-q"],
                                out / "ferry.tar")}
    if tools.get("dtar"):
        cmds[f"dtar np{ranks}"] = ([*MPIRUN, "-np", str(ranks), tools["dtar"], "-c", "-f", str(out / "dtar.tar"),
                                    name], out / "dtar.tar")
    if ranks >= 2 and tools.get("parfu"):
        cmds[f"parfu np{ranks}"] = ([*MPIRUN, "-np", str(ranks), tools["parfu"],
                                     f"archivefile={out / 'parfu.tar'}", name], out / "parfu.tar")
    if ranks >= 2 and tools.get("mpitar"):
        cmds[f"mpitar np{ranks}"] = ([*MPIRUN, "-np", str(ranks), tools["mpitar"], "-c", "-f",
                                      str(out / "mpitar.tar"), name], out / "mpitar.tar")
    if ranks >= 2 and tools.get("ptgz"):  # a tar of gzip'ed tars, one a rank; it says done even when tar failed
        cmds[f"ptgz np{ranks}"] = ([*MPIRUN, "-np", str(ranks), tools["ptgz"], "-c", "-d", name, str(out / "ptgz")],
                                   out / "ptgz.ptgz.tar")
    if ranks == 1:
        cmds["gnu tar"] = (["tar", "-cf", str(out / "gnu.tar"), name], out / "gnu.tar")
        cmds["tar -I pigz"] = (["tar", "-I", "pigz", "-cf", str(out / "pigz.tar.gz"), name], out / "pigz.tar.gz")
        cmds["tar -I zstd -T0"] = (["tar", "-I", "zstd -T0", "-cf", str(out / "z.tar.zst"), name],
                                   out / "z.tar.zst")
        cmds["ferry zstd"] = ([*ferry, "pack", str(src), str(out / "ferry.tar.zst"), "-q"], out / "ferry.tar.zst")
    return cmds


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def timed(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, the children's CPU seconds, and stderr's end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:6]} exited {proc.returncode}: {proc.stderr[-400:]}")
    return wall, cpu, proc.stderr[-200:]


def check_archive(path: Path, digests: dict[str, str]) -> int:
    """Every source file is in the archive with its bytes (any tar, gzip or zstd); returns the members read."""
    if path.name.endswith(".ptgz.tar"):
        return _check_nested(path, digests)
    if path.suffix == ".zst":
        reader = subprocess.Popen(["zstd", "-dcq", str(path)], stdout=subprocess.PIPE)
        tar = tarfile.open(fileobj=reader.stdout, mode="r|", errors="surrogateescape")
    else:
        reader, tar = None, tarfile.open(path, "r|*", errors="surrogateescape")
    seen = 0
    with tar:
        for info in tar:
            name = info.name.split("/", 1)[1] if "/" in info.name else info.name
            if not info.isfile() or info.name.endswith(SKIP):
                continue
            data = tar.extractfile(info).read()
            if digests.get(name) != hashlib.sha256(data).hexdigest():
                raise RuntimeError(f"{path.name}: {info.name} differs from the source")
            seen += 1
    if reader is not None:
        reader.wait()
    if seen != len(digests):
        raise RuntimeError(f"{path.name} holds {seen} of the {len(digests)} files")
    return seen


def _check_nested(path: Path, digests: dict[str, str]) -> int:
    """ptgz's archive: a tar of ``N.NAME.tar.gz`` members, each a tar of some of the files."""
    seen = 0
    with tarfile.open(path, "r:") as outer:
        for inner_info in outer:
            if not inner_info.name.endswith(".tar.gz"):
                continue
            with tarfile.open(fileobj=outer.extractfile(inner_info), mode="r:gz",
                              errors="surrogateescape") as inner:
                for info in inner:
                    name = info.name.split("/", 1)[1] if "/" in info.name else info.name
                    if info.isfile():
                        if digests.get(name) != hashlib.sha256(inner.extractfile(info).read()).hexdigest():
                            raise RuntimeError(f"{path.name}: {info.name} differs from the source")
                        seen += 1
    if seen != len(digests):
        raise RuntimeError(f"{path.name} holds {seen} of the {len(digests)} files")
    return seen


def check_tree(root: Path, digests: dict[str, str]) -> None:
    for rel, digest in digests.items():
        with open(root / rel, "rb") as f:
            if hashlib.file_digest(f, "sha256").hexdigest() != digest:
                raise RuntimeError(f"{rel} unpacked differs from the source")


def unpack_commands(out: Path, ranks: int, tools: dict) -> dict[str, tuple[list[str], Path]]:
    """tool → (argv, the folder it unpacks into); each reads the archive its own pack made."""
    cmds = {f"ferry w{ranks}": ([sys.executable, "-m", "app", "unpack", str(out / "ferry.tar"), str(out / "x-ferry"),
                                 "--workers", str(ranks), "-q"], out / "x-ferry")}
    if tools.get("dtar"):
        cmds[f"dtar np{ranks}"] = ([*MPIRUN, "-np", str(ranks), tools["dtar"], "-x", "-f", str(out / "dtar.tar"),
                                    "-C", str(out / "x-dtar")], out / "x-dtar")
    if ranks == 1:
        cmds["gnu tar"] = (["tar", "-xf", str(out / "gnu.tar"), "-C", str(out / "x-gnu")], out / "x-gnu")
    return cmds


def _clear(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    for extra in (path.with_name(path.name + ".idx"), path.with_name(path.name + ".dtaridx")):
        extra.unlink(missing_ok=True)


def one_round(args, src: Path, digests: dict[str, str], out: Path, tools: dict, round_no: int) -> list[dict]:
    rows = []
    for ranks in args.ranks:
        steps = [("pack", name, argv, target) for name, (argv, target) in pack_commands(src, out, ranks, tools).items()]
        steps += [("unpack", name, argv, target) for name, (argv, target) in unpack_commands(out, ranks, tools).items()]
        steps = [s for s in steps if not args.tools or any(s[1].startswith(t) for t in args.tools)]
        for op, name, argv, target in steps:
            _clear(target)
            if op == "unpack":
                target.mkdir(parents=True)
            drop_caches()
            row = {"set": args.set, "op": op, "tool": name, "ranks": ranks, "round": round_no, "files": len(digests)}
            try:
                wall, cpu, _ = timed(argv, src.parent)
                if op == "pack":
                    check_archive(target, digests)
                else:
                    check_tree(target / src.name, digests)
            except (RuntimeError, OSError, tarfile.TarError) as exc:  # a peer that fails is said, not measured
                row["failed"] = " ".join(str(exc).split())[:200]
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
            row |= {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                    "archive_bytes": target.stat().st_size if op == "pack" else None}
            if op == "unpack":
                shutil.rmtree(target)
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
    return rows


def render(rows: list[dict], args, data_bytes: int, command_line: str, tools: dict) -> str:
    cores = os.cpu_count() or 1
    found = ", ".join(f"{k}: {'found' if v else 'not found'}" for k, v in tools.items())
    lines = [f"{HEADING} ({args.set})", "",
             f"{len(rows) // max(1, args.rounds)} runs a round, {args.rounds} rounds interleaved, page cache dropped "
             f"before each run, every file checked; {rows[0]['files']:,} files, {data_bytes / 1e9:.2f} GB; "
             f"{cores} cores. Peers: {found}.", "",
             f"    {command_line}", "",
             "| op | tool | ranks | median s | CPU s | % of cores | MB/s | vs Ferry at equal ranks |",
             "|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple, list[dict]] = {}
    failed: dict[tuple, str] = {}
    for row in rows:
        if "failed" in row:
            failed[(row["op"], row["tool"], row["ranks"])] = row["failed"][:120]
        else:
            groups.setdefault((row["op"], row["tool"], row["ranks"]), []).append(row)
    medians = {key: statistics.median(r["wall_s"] for r in group) for key, group in groups.items()}
    for (op, tool, ranks), group in groups.items():
        wall = medians[(op, tool, ranks)]
        cpu = statistics.median(r["cpu_s"] for r in group)
        ferry = medians.get((op, f"ferry w{ranks}", ranks))
        ratio = f"{wall / ferry:.2f}× Ferry's time" if ferry and not tool.startswith("ferry w") else "—"
        lines.append(f"| {op} | {tool} | {ranks} | {wall:.2f} | {cpu:.1f} | {100 * cpu / wall / cores:.0f} % | "
                     f"{data_bytes / wall / 1e6:.0f} | {ratio} |")
    for (op, tool, ranks), why in failed.items():
        if (op, tool, ranks) not in groups:
            lines.append(f"| {op} | {tool} | {ranks} | failed: {why} | | | | |")
    lines += ["", "Scaling (Ferry's workers; ranks for dtar): time at 1 ÷ (time at N × N).", "",
              "| op | tool | ranks | median s | speed-up | efficiency |", "|---|---|---|---|---|---|"]
    for (op, tool, ranks), wall in medians.items():
        base_tool = tool.rsplit(" ", 1)[0]
        base = next((w for (o, t, n), w in medians.items() if o == op and n == 1 and t.startswith(base_tool)), None)
        if base and " " in tool and tool.split(" ")[-1][:1] in "wn":
            lines.append(f"| {op} | {base_tool} | {ranks} | {wall:.2f} | {base / wall:.2f}× | "
                         f"{100 * base / wall / ranks:.0f} % |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("millions", "lshaped"), default="millions")
    parser.add_argument("--files", type=int, default=300_000)
    parser.add_argument("--large", type=int, default=4)
    parser.add_argument("--ranks", type=lambda t: [int(x) for x in t.split(",")], default=[1, 2, 4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default="/tmp/labferry-bench-archive")
    parser.add_argument("--tools", type=lambda t: t.split(","), default=[],
                        help="only the tools whose names begin so (ferry,dtar,gnu tar,ptgz…); default all")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--write", metavar="MARKDOWN")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("run as root: each run drops the page cache", file=sys.stderr)
        return 2
    precompile()
    work = Path(args.work)
    src, digests = make_set(args.set, work, args.files, args.large)
    data_bytes = sum((src / rel).stat().st_size for rel in digests)
    tools = peers()
    print(f"peers: {tools}", file=sys.stderr)
    out = work / "out"
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for round_no in range(args.rounds):
        rows += one_round(args, src, digests, out, tools, round_no)
    text = render(rows, args, data_bytes, "sudo LABFERRY_PARFU=… LABFERRY_MPITAR=… LABFERRY_DTAR=… "
                  ".venv/bin/python tests/bench/archive_pack.py " + " ".join(sys.argv[1:]), tools)
    print(text)
    if args.write:
        replace_section(args.write, f"{HEADING} ({args.set})", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
