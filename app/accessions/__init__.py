"""Public data by accession: ``labferry copy ena:PRJEB12345 DEST/`` fetches every file of a study, verified.

What to fetch comes from ENA's Portal API (``filereport``, result ``read_run``): the files, their MD5s and byte
counts, and the run, experiment, sample and study each belongs to. Paths are never built from accession
patterns. Each file then goes through the front door as an HTTPS download with its published MD5, several at
once; the folder gets ``samplesheet.csv`` (nf-core fetchngs' columns) and ``metadata.tsv`` (the whole report).

* ``ids``: what an accession is, and whether a command-line word is one.
* ``ena``: the portal's report, and the plan it gives (files, sizes, what has no files of the kind asked).
* ``sheets``: the samplesheet and the metadata table.
* ``fetch``: the files through the engine, a few at once, and the summary.
"""
