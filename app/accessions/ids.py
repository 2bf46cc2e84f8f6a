"""Accessions: which kind each is (run, experiment, sample, study, project), and which words are one.

The INSDC prefixes: SRA (S), ENA (E) and DDBJ (D) share the archive, so ``SRR1`` and ``ERR1`` are both runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from backends.core.errors import BadRequest

PREFIX = "ena:"

KINDS: tuple[tuple[str, re.Pattern], ...] = (
    ("run", re.compile(r"[SED]RR\d{6,}")),
    ("experiment", re.compile(r"[SED]RX\d{6,}")),
    ("sample", re.compile(r"[SED]RS\d{6,}|SAM[NED][A-Z]?\d+")),
    ("study", re.compile(r"[SED]RP\d{6,}")),
    ("project", re.compile(r"PRJ[NED][A-Z]\d+")),
)
#: GEO series and samples: mapped to the SRA study or experiment they link through NCBI's E-utilities (geo.py)
GEO = (("geo-series", re.compile(r"GSE\d+")), ("geo-sample", re.compile(r"GSM\d+")))
#: what looks like an accession at all: letters then digits (a typo in one is still said to be one)
LOOKS_LIKE = re.compile(r"[A-Z]{3,6}\d{3,}")


@dataclass(frozen=True)
class Accession:
    text: str
    kind: str  # run | experiment | sample | study | project | geo-series | geo-sample


def parse(text: str) -> Accession:
    """``ena:ACC`` or a bare accession, checked; anything else is bad input (a sentence, exit 2)."""
    word = text[len(PREFIX):] if text.lower().startswith(PREFIX) else text
    word = word.strip().upper()  # ENA and NCBI take srr1234567 as SRR1234567
    for kind, pattern in (*KINDS, *GEO):
        if pattern.fullmatch(word):
            return Accession(word, kind)
    raise BadRequest(f"'{word}' is not an accession Ferry knows. Give a run (SRR/ERR/DRR…), experiment (SRX…), "
                     "sample (SRS…, SAMN…, SAMEA…), study (SRP/ERP/DRP…), project (PRJNA/PRJEB/PRJDB…) or GEO "
                     "series or sample (GSE…, GSM…), such as ena:PRJEB12345.")


def is_accession(source: str) -> bool:
    """Whether ``labferry copy SOURCE`` names public data: ``ena:…`` always; a bare word that looks like an
    accession only when no local file or folder has that name (then it is an upload, as before)."""
    if source.lower().startswith(PREFIX):
        return True
    if "/" in source or "\\" in source or ":" in source or Path(source).exists():
        return False
    word = source.upper()
    return any(p.fullmatch(word) for _, p in (*KINDS, *GEO)) or bool(LOOKS_LIKE.fullmatch(word))
