"""What an accession, or a list of them, comes to: the plan (files, sizes, MD5s) from ENA's report.

Shared by ``labferry copy ena:…`` and the window's Public data dialog: every word is checked before any
service is asked (a malformed one is bad input, nothing asked), GEO accessions go through the SRA they link,
and what the archive has nothing for is kept to be said, never dropped.
"""

from __future__ import annotations

from pathlib import Path

from backends.core.errors import BadRequest, NotFound, TransferError, Transient, Unreachable
from backends.core.words import first_named

from . import ena, geo, ids


def build_plan(sources: list[str], label: str, kind: str = "fastq", route: str = "https", *,
               ca_file: str | None = None, source: str = "auto") -> ena.Plan:
    """The plan for ``sources`` (accessions, ``ena:…`` or plain addresses), named ``label``. ``source``: auto
    asks NCBI for the runs ENA has no file of this kind for (or a run when ENA's portal fails), ncbi takes
    every run's ``.sra`` from NCBI (ENA's report, when it answers, still gives the runs and their metadata)."""
    parsed = [s if "://" in s else ids.parse(s) for s in sources]  # a malformed word: bad input, nothing asked
    plan = ena.Plan(label, kind, route, source=source)
    not_in_ena: dict[str, TransferError | None] = {}  # runs asked of NCBI as ENA had nothing (or failed: why)
    for word in parsed:
        if isinstance(word, str):
            plan.add_url(word)
            continue
        for asked in in_ena(word, plan, ca_file):
            rows, failed = _ena_rows(asked, plan, ca_file)
            if rows:
                plan.add(rows, with_files=source != "ncbi")
            elif _from_ncbi(plan) and asked.kind == "run":
                plan.rows.append({"run_accession": asked.text})
                plan.without_files.append(asked.text)
                not_in_ena[asked.text] = failed
            else:
                plan.nothing_for.append(asked.text)
    if _from_ncbi(plan):
        locate_at_ncbi(plan, ca_file)
        for run, failed in not_in_ena.items():
            if run in plan.from_ncbi:
                continue
            if failed is not None:
                raise failed  # ENA could not be asked, and NCBI did not have it either: ENA's failure is the news
            plan.rows = [row for row in plan.rows if row.get("run_accession") != run]  # in neither archive
            plan.without_files.remove(run)
            plan.nothing_for.append(run)
    if not plan.files and not plan.without_files and not plan.nothing_for:
        raise NotFound(no_reads_in_geo(plan))
    if not plan.files and not plan.without_files:
        one = plan.nothing_for[0] if len(plan.nothing_for) == 1 else None
        archives = "ENA and NCBI have" if _from_ncbi(plan) else "ENA has"
        raise NotFound(f"{archives} nothing public for {one or ', '.join(plan.nothing_for)} (it may not be public "
                       "yet, be suppressed, or have a typo)." + (f" Check https://www.ebi.ac.uk/ena/browser/view/{one}."
                                                                  if one else ""))
    return plan


def _from_ncbi(plan: ena.Plan) -> bool:
    """Whether NCBI is asked for runs: not with ``--source ena``, and not for submitted files (a .sra is not)."""
    return plan.source != "ena" and plan.kind in ("fastq", "sra")


def _ena_rows(asked: ids.Accession, plan: ena.Plan, ca_file: str | None) -> tuple[list[dict], TransferError | None]:
    """ENA's report rows for ``asked``; a run whose report cannot be had (the portal down) is asked of NCBI
    instead under ``--source auto``/``ncbi``, and said so: (no rows, why)."""
    try:
        return ena.report(asked, ca_file=ca_file), None
    except (Unreachable, Transient) as exc:
        if not (_from_ncbi(plan) and asked.kind == "run"):
            raise
        plan.notes.append(f"{exc} Asking NCBI for {asked.text} instead.")
        return [], exc


#: the most runs one plan asks NCBI's locator about (a project ENA has no files for at all is asked of NCBI
#: run by run; past this, the user is told to fetch it in parts)
NCBI_RUNS_LIMIT = 10_000


def locate_at_ncbi(plan: ena.Plan, ca_file: str | None) -> None:
    """Each run without a file of the plan's kind, located by NCBI's SRA Data Locator: its ``.sra`` joins the
    plan; a run NCBI has nothing for stays without files (and is said)."""
    from . import ncbi

    runs = list(plan.without_files)
    if len(runs) > NCBI_RUNS_LIMIT:
        raise BadRequest(f"{len(runs)} runs would be asked of NCBI one by one; fetch at most {NCBI_RUNS_LIMIT} at a "
                         "time (--filter, --runs, or a list with -i).")
    for run in runs:
        try:
            found = ncbi.locate(run, ca_file=ca_file)
        except TransferError as exc:
            if plan.source == "ncbi":
                raise
            plan.notes.append(f"{exc} The runs ENA has no files for are left out ({first_named(runs)}).")
            return
        if found is not None:
            plan.files.append(found)
            plan.without_files.remove(run)
            plan.from_ncbi.append(run)


def in_ena(source: ids.Accession, plan: ena.Plan, ca_file: str | None) -> list[ids.Accession]:
    """What ENA is asked for: the accession itself, or the SRA study or experiments a GEO one links."""
    if not source.kind.startswith("geo-"):
        return [source]
    links = geo.sra_for(source, ca_file=ca_file)
    plan.geo[source.text] = [a.text for a in links.sra]
    if links.subseries:
        plan.subseries[source.text] = links.subseries
    return links.sra


def no_reads_in_geo(plan: ena.Plan) -> str:
    """GEO linked no reads to any accession asked: which, and where to look instead."""
    said = []
    for accession in (a for a, linked in plan.geo.items() if not linked):
        sub = plan.subseries.get(accession)
        said.append(f"{accession} is a GEO SuperSeries; its reads are under its series ({', '.join(sub[:6])}"
                    f"{', …' if len(sub) > 6 else ''}): fetch those" if sub else
                    f"GEO links no SRA reads to {accession} (it may hold processed files only; see "
                    f"https://www.ncbi.nlm.nih.gov/geo/query/acc.cgi?acc={accession})")
    return "; ".join(said) + "."


LAYOUTS = ("flat", "sample")


def apply_layout(plan: ena.Plan, layout: str) -> ena.Plan:
    """``--layout sample``: each run's files in a folder named after its biological sample (ENA's sample
    accession, else the experiment's, else the run's, made a name every OS and pipeline takes); ``flat`` keeps
    every file in DEST. The archive's file names are kept either way; the samplesheets point into the folders."""
    if layout != "sample":
        return plan
    from dataclasses import replace

    from .pipelines import safe_sample

    folder_of = {row.get("run_accession"): safe_sample(row.get("sample_accession") or row.get("experiment_accession")
                                                       or row.get("run_accession") or "") for row in plan.rows}
    plan.files = [replace(f, name=f"{folder_of[f.run]}/{f.name}") if f.run in folder_of else f for f in plan.files]
    return plan


#: the most a list file may hold (a million accessions is ~12 MiB)
LIST_LIMIT = 64 * 1024 * 1024


def read_list(path: Path) -> list[str]:
    """``-i FILE``: one accession or address per line; blank lines and ``#`` comments are skipped. The file is
    UTF-8, with or without the byte-order mark Windows editors write; any other encoding is refused in a
    sentence naming the first line that is not UTF-8."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(LIST_LIMIT + 1)
    except OSError as exc:
        raise BadRequest(f"Cannot read the list {path}: {exc.strerror}. Check the file name.") from None
    if len(raw) > LIST_LIMIT:
        raise BadRequest(f"The list {path} is larger than {LIST_LIMIT >> 20} MiB; split it into smaller lists.")
    text = _utf8(raw, path)
    found = words_of(text)
    if not found:
        raise BadRequest(f"The list {path} names no accession or address (one per line; # starts a comment).")
    return found


def _utf8(raw: bytes, path: Path) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise BadRequest(f"The list {path} is saved as UTF-16. Save it as UTF-8 (in Notepad: Save as → Encoding → "
                         "UTF-8) and run the command again.")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise BadRequest(f"Line {line} of the list {path} is not UTF-8 (byte 0x{raw[exc.start]:02x}); save the list "
                         "as UTF-8 and run the command again.") from None


def words_of(text: str) -> list[str]:
    """Accessions or addresses in a list's text: one per line (or separated by spaces and commas in a box),
    blank lines and ``#`` comments skipped."""
    found = []
    for line in text.splitlines():
        found += [w for w in line.split("#", 1)[0].replace(",", " ").split() if w]
    return found
