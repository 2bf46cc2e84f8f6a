"""A run's ``.sra`` from NCBI as the gzipped FASTQ a pipeline reads, with sra-tools' ``fasterq-dump``.

``fasterq-dump --split-files --include-technical`` writes one plain FASTQ per read of the run (``RUN_1.fastq``,
``RUN_2.fastq``, …; ``RUN.fastq`` for a single read), technical reads (an index) included: ENA often drops
those. It writes into a private folder inside DEST (same disk, so the last step is a rename); each file is then
gzipped (level 1: the conversion, not the disk, is the slow part) with its MD5 taken on the way, and moved to
``RUN_N.fastq.gz`` through the destination module. ``RUN.fastq.md5`` (md5sum's format) is written last: it
says the conversion is whole, so a second run of the same command converts nothing twice. Without
``fasterq-dump`` the ``.sra`` is kept and the user told, in one sentence, what to install.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from backends.core.errors import LocalError, TransferError
from backends.destination import Destination, move_into_place, open_new, write_atomic

from .ena import RemoteFile

#: the slowest a conversion may be before it counts as hung: fasterq-dump writes tens of MB/s on a laptop
SLOWEST_BYTES_PER_S = 2 * 1024 * 1024
INSTALL = ("install sra-tools for fasterq-dump (Debian/Ubuntu: apt install sra-toolkit; conda: conda install -c "
           "bioconda sra-tools), then run the same command again to get its FASTQ files")
_OUTPUT = re.compile(r"^(?P<stem>.+?)(?:_(?P<read>\d+))?\.fastq$")


def tool() -> str | None:
    return shutil.which("fasterq-dump")


def manifest_of(folder: Path, run: str) -> Path:
    return folder / f"{run}.fastq.md5"


def converted(folder: Path, run: str) -> list[RemoteFile] | None:
    """The run's FASTQ files from an earlier conversion (its manifest, every file there at its size), or None."""
    try:
        lines = manifest_of(folder, run).read_text().splitlines()
    except OSError:
        return None
    files = []
    for line in lines[:64]:
        md5, _, name = line.partition("  ")
        path = folder / name
        if len(md5) != 32 or not path.is_file():
            return None
        files.append(RemoteFile(run, name, "", md5, path.stat().st_size, _read_of(name, run), source="ncbi"))
    return files or None


def convert(run: str, sra: Path, folder: Path) -> list[RemoteFile]:
    """``sra`` (verified) as ``RUN_N.fastq.gz`` files in ``folder``; returns them with their MD5s."""
    earlier = converted(folder, run)
    if earlier is not None:
        return earlier
    dumper = tool()
    if dumper is None:
        raise LocalError(f"{run} came from NCBI as {sra.name}; {INSTALL}.")
    try:
        work = Path(tempfile.mkdtemp(prefix=".ferry-fasterq-", dir=folder))
    except OSError as exc:
        raise LocalError(f"Ferry cannot make a folder in {folder} to convert {sra.name} ({exc.strerror}).") from None
    try:
        _dump(dumper, sra, work, run)
        made = sorted(work.glob("*.fastq"), key=lambda p: p.name)
        if not made:
            raise TransferError(f"fasterq-dump wrote no FASTQ for {run}; its .sra is kept as {sra.name}.")
        files = [_gzip_into_place(path, folder, run) for path in made[:64]]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_atomic(manifest_of(folder, run), "".join(f"{f.md5}  {f.name}\n" for f in files).encode())
    return files


def _dump(dumper: str, sra: Path, work: Path, run: str) -> None:
    """fasterq-dump into ``work``, within a time its size allows; a signal ends it with Ferry."""
    argv = [dumper, "--split-files", "--include-technical", "--threads", "2", "--temp", str(work), "--outdir",
            str(work), str(sra.resolve())]
    limit = max(600.0, sra.stat().st_size * 8 / SLOWEST_BYTES_PER_S)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise TransferError(f"fasterq-dump took over {limit / 60:.0f} min on {sra.name}; its .sra is kept. Convert "
                            "it yourself with fasterq-dump, or run the command again.") from None
    finally:
        if proc.poll() is None:  # a signal (Ctrl-C) while waiting
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=10)
    if proc.returncode != 0:
        said = " ".join(err.decode("utf-8", "replace").split())[-300:]
        raise TransferError(f"fasterq-dump could not convert {sra.name} ({said or f'status {proc.returncode}'}); "
                            "the .sra is kept.")


def _gzip_into_place(plain: Path, folder: Path, run: str) -> RemoteFile:
    """One of fasterq-dump's files gzipped beside it, MD5 taken on the way, then moved to its final name."""
    found = _OUTPUT.match(plain.name)
    read = int(found["read"]) if found and found["read"] else None
    name = f"{run}_{read}.fastq.gz" if read is not None else f"{run}.fastq.gz"
    packed = plain.with_name(name)
    digest = hashlib.md5()
    fd = open_new(packed, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "wb") as raw, _Hashing(raw, digest) as sink, gzip.GzipFile(
            filename="", mode="wb", fileobj=sink, compresslevel=1, mtime=0) as out, open(plain, "rb") as src:
        while block := src.read(1 << 20):
            out.write(block)
    plain.unlink()
    final = Destination(folder).file(name)
    move_into_place(packed, final, time.time(), 0o644)
    return RemoteFile(run, name, "", digest.hexdigest(), final.stat().st_size, read, source="ncbi")


class _Hashing:
    """A binary file that hashes what is written to it (the gzip stream, as it reaches the disk)."""

    def __init__(self, raw, digest) -> None:
        self.raw, self.digest = raw, digest

    def write(self, data) -> int:
        self.digest.update(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()

    def __enter__(self) -> _Hashing:
        return self

    def __exit__(self, *exc) -> None:
        self.raw.flush()


def _read_of(name: str, run: str) -> int | None:
    found = re.fullmatch(re.escape(run) + r"_(\d+)\.fastq\.gz", name)
    return int(found[1]) if found else None


def convert_runs(plan, folder: Path, verified: set[str]) -> list[str]:
    """Each run whose ``.sra`` came from NCBI and is here verified, as FASTQ beside it (``plan.converted``, names
    relative to ``folder``); returns a sentence for each run that stays a ``.sra`` (no fasterq-dump: one
    sentence for all of them)."""
    said, missing = [], []
    for f in (f for f in plan.files if f.source == "ncbi" and f.name in verified):
        sra = folder / Destination(folder).claim(f.name)
        sub = posixpath.dirname(f.name)  # the sample's folder (``--layout sample``), or DEST itself
        try:
            made = converted(sra.parent, f.run) if tool() is None else convert(f.run, sra, sra.parent)
        except TransferError as exc:
            said.append(str(exc))
            continue
        if made is None:
            missing.append(f.run)
            continue
        plan.converted[f.run] = [replace(m, name=posixpath.join(sub, m.name)) if sub else m for m in made]
    if missing:
        more = " and more" if len(missing) > 5 else ""
        said.append(f"{', '.join(missing[:5])}{more} came from NCBI as .sra; {INSTALL}")
    return said
