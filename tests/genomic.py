"""Test data that looks like the real thing: Illumina reads simulated by ``art_illumina`` (Debian's
art-nextgen-simulation-tools) over a generated reference, as plain FASTQ, gzipped FASTQ and SAM.

The reference is random bases from a fixed seed (a real genome is not to be had here); the reads, their
HiSeq 2500 quality strings and the SAM's alignments are ART's own. The compression tests and
``tests/bench/compress_wan.py`` both use this.
"""

from __future__ import annotations

import gzip
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

BASES_PER_CONTIG = 1_000_000
READ_LENGTH = 150
FOLD = 20


@dataclass(frozen=True)
class Reads:
    fastq: Path
    sam: Path

    def gzipped(self) -> Path:
        """The same reads gzipped (level 6, as sequencers' pipelines write them), made once."""
        out = self.fastq.with_name(self.fastq.name + ".gz")
        if not out.exists():
            with open(self.fastq, "rb") as src, gzip.open(out, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 4 << 20)
        return out


def reference(path: Path, contigs: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    with open(path, "w") as fh:
        for n in range(contigs):
            fh.write(f">chr{n + 1}\n")
            seq = "".join(rng.choices("ACGT", k=BASES_PER_CONTIG))
            fh.writelines(seq[i:i + 60] + "\n" for i in range(0, len(seq), 60))
    return path


def simulate(folder: Path, fastq_bytes: int, seed: int = 42, sam: bool = True) -> Reads:
    """About ``fastq_bytes`` of single-end 150 bp HiSeq 2500 reads in ``folder/reads.fq`` (and ``reads.sam``).

    ART's fold coverage sets the amount: one fold over 1 Mbp writes about 2.1 MB of FASTQ. Large sets keep to
    ~20-fold over a reference grown to fit (4 GiB: 100 Mbp), as a real run's coverage is, so that zstd's window
    does not find the same stretch of genome more often than it would in real reads."""
    if not shutil.which("art_illumina"):
        raise RuntimeError("art_illumina is missing: install art-nextgen-simulation-tools (tests/system-deps.sh).")
    folder.mkdir(parents=True, exist_ok=True)
    contigs = max(2, round(fastq_bytes / (2.1e6 * FOLD)))
    ref = reference(folder / "ref.fa", contigs)
    fold = max(1, round(fastq_bytes / (2.1e6 * contigs)))
    prefix = folder / "reads"
    subprocess.run(["art_illumina", "-ss", "HS25", "-i", str(ref), "-l", str(READ_LENGTH), "-f", str(fold),
                    "-o", str(prefix), *(["-sam"] if sam else []), "-q", "-rs", str(seed)],
                   check=True, capture_output=True)
    (folder / "reads.aln").unlink(missing_ok=True)  # ART's own alignment format: not needed
    return Reads(folder / "reads.fq", folder / "reads.sam")
