"""A run's ``.sra`` from NCBI as the gzipped FASTQ a pipeline reads, with sra-tools' ``fasterq-dump``.

``fasterq-dump --split-spot --include-technical --stdout`` gives every read of every spot, technical reads (an
index) included: ENA often drops those. Ferry splits that stream by read number into one gzipped file per read
as it comes (level 1: the conversion, not the disk, is the slow part), with its MD5 taken on the way, in a
private folder inside DEST (same disk, so the last step is a rename), then moves them to ``RUN_1.fastq.gz``,
``RUN_2.fastq.gz`` … (``RUN.fastq.gz`` for a single read) through the destination module. No plain FASTQ ever
lands on the disk: it is three to four times the size of the .sra. ``RUN.fastq.md5`` (md5sum's format) is
written last: it says the conversion is whole, so a second run of the same command converts nothing twice. Without
``fasterq-dump`` the ``.sra`` is kept and the user told, in one sentence, what to install.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import posixpath
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from backends.core.errors import LocalError, TransferError
from backends.core.words import first_named
from backends.destination import Destination, move_into_place, open_new, write_atomic

from .ena import RemoteFile
from .reads import number_of

#: the slowest a conversion may be before it counts as hung: fasterq-dump writes tens of MB/s on a laptop
SLOWEST_BYTES_PER_S = 2 * 1024 * 1024
INSTALL = ("install sra-tools for fasterq-dump (Debian/Ubuntu: apt install sra-toolkit; conda: conda install -c "
           "bioconda sra-tools), then run the same command again to get its FASTQ files")


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
        files.append(RemoteFile(run, name, "", md5, path.stat().st_size, number_of(name, run) or None,
                                source="ncbi"))
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
        made = _dump(dumper, sra, work)
        if not made:
            raise TransferError(f"fasterq-dump wrote no reads for {run}; its .sra is kept as {sra.name}.")
        files = []
        for read, (path, md5) in sorted(made.items()):
            name = f"{run}.fastq.gz" if len(made) == 1 else f"{run}_{read}.fastq.gz"
            final = Destination(folder).file(name)
            move_into_place(path, final, time.time(), 0o644)
            files.append(RemoteFile(run, name, "", md5, final.stat().st_size, None if len(made) == 1 else read,
                                    source="ncbi"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_atomic(manifest_of(folder, run), "".join(f"{f.md5}  {f.name}\n" for f in files).encode())
    return files


def _dump(dumper: str, sra: Path, work: Path) -> dict[int, tuple[Path, str]]:
    """fasterq-dump's reads, spot by spot on its stdout, split by read number into gzipped files in ``work`` as
    they come (no plain FASTQ on disk: it is three to four times the .sra). The read number travels in the
    quality line (``+N``), which is written back as ``+``. A fasterq-dump slower than its size allows is killed;
    so is one Ferry stops (Ctrl-C)."""
    argv = [dumper, "--split-spot", "--include-technical", "--stdout", "--threads", "2", "--temp", str(work),
            "--seq-defline", "@$ac.$si $sn length=$rl", "--qual-defline", "+$ri", str(sra.resolve())]
    limit = max(600.0, sra.stat().st_size * 8 / SLOWEST_BYTES_PER_S)
    err = open_new(work / "fasterq-dump.err", os.O_WRONLY | os.O_TRUNC)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, cwd=work)
    finally:
        os.close(err)
    too_slow = threading.Event()

    def stop_it() -> None:
        too_slow.set()
        proc.kill()

    watchdog = threading.Timer(limit, stop_it)
    watchdog.start()
    outputs = _Outputs(work)
    try:
        outputs.split(proc.stdout)
        status = proc.wait()
    finally:
        watchdog.cancel()
        if proc.poll() is None:  # a signal (Ctrl-C) or a broken stream: fasterq-dump ends with Ferry
            proc.kill()
            proc.wait()
        proc.stdout.close()
        made = outputs.close()
    if status != 0:
        said = " ".join((work / "fasterq-dump.err").read_text(errors="replace").split())[-300:]
        why = f"over {limit / 60:.0f} min" if too_slow.is_set() else said or f"status {status}"
        raise TransferError(f"fasterq-dump could not convert {sra.name} ({why}); the .sra is kept. Run the "
                            "command again, or convert it yourself with fasterq-dump.")
    return made


#: the most reads a spot may have (Illumina: 4 with two indexes)
MAX_READS = 16


class _Outputs:
    """One gzipped FASTQ per read number, opened as that read first appears, each hashed as it reaches the disk."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.open: dict[int, tuple[Path, object, object, object]] = {}  # read → (path, digest, raw, gzip)

    def split(self, stream) -> None:
        lines = iter(stream)
        for header in lines:
            seq, plus, qual = next(lines, b""), next(lines, b""), next(lines, b"")
            if not header.startswith(b"@") or not plus.startswith(b"+") or not qual:
                raise TransferError("fasterq-dump wrote something that is not FASTQ; the .sra is kept.")
            read = int(plus[1:].strip() or b"1") if plus[1:].strip().isdigit() else 1
            self._writer(read).write(header + seq + b"+\n" + qual)

    def _writer(self, read: int):
        if read not in self.open:
            if len(self.open) >= MAX_READS:
                raise TransferError(f"fasterq-dump wrote more than {MAX_READS} reads a spot; the .sra is kept.")
            path = self.work / f"read{read}.fastq.gz"
            digest = hashlib.md5()
            raw = os.fdopen(open_new(path, os.O_WRONLY | os.O_TRUNC), "wb")
            packed = gzip.GzipFile(filename="", mode="wb", fileobj=_Hashing(raw, digest), compresslevel=1, mtime=0)
            self.open[read] = (path, digest, raw, packed)
        return self.open[read][3]

    def close(self) -> dict[int, tuple[Path, str]]:
        made = {}
        for read, (path, digest, raw, packed) in self.open.items():
            packed.close()
            raw.close()
            made[read] = (path, digest.hexdigest())
        return made


class _Hashing:
    """A binary file that hashes what is written to it (the gzip stream, as it reaches the disk)."""

    def __init__(self, raw, digest) -> None:
        self.raw, self.digest = raw, digest

    def write(self, data) -> int:
        self.digest.update(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def convert_runs(plan, folder: Path, verified: set[str], on_run=None) -> list[str]:
    """Each run whose ``.sra`` came from NCBI and is here verified, as FASTQ beside it (``plan.converted``, names
    relative to ``folder``); returns a sentence for each run that stays a ``.sra`` (no fasterq-dump: one
    sentence for all of them). ``on_run(run, name)`` is told as each conversion begins."""
    said, missing = [], []
    saved = Destination(folder)  # where each .sra was saved (its name made safe)
    for f in (f for f in plan.files if f.source == "ncbi" and f.name in verified):
        sra = folder / saved.claim(f.name)
        sub = posixpath.dirname(f.name)  # the sample's folder (``--layout sample``), or DEST itself
        try:
            made = converted(sra.parent, f.run)
            if made is None and tool() is not None:
                if on_run is not None:
                    on_run(f.run, f.name)  # ``on_run(run, name)``: told as a conversion begins
                made = convert(f.run, sra, sra.parent)
        except TransferError as exc:
            said.append(str(exc))
            continue
        if made is None:
            missing.append(f.run)
            continue
        plan.converted[f.run] = [replace(m, name=posixpath.join(sub, m.name)) if sub else m for m in made]
    if missing:
        said.append(f"{first_named(missing)} came from NCBI as .sra; {INSTALL}")
    return said
