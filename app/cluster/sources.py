"""What a cluster job's SRC holds, as the list of files the tasks fetch: a remote folder walked once here.

Only backends that fetch a list of files as one job (``ListFetcher``: HTTP(S) and FTP servers) can take a share
of a folder; the others are refused in one sentence before anything is listed. The walk is bounded: at most
``--max-depth`` levels (as a single-node folder copy), ``MOST_FOLDERS`` folders and ``plan.MOST_FILES`` files.
Every name is claimed in DEST here, once for the whole job: two files that the safe-name rules (or a disk that
folds case) would put on one path are numbered before they are dealt to different nodes, which could otherwise
both write it.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

from app.requests import Request
from backends.core.abilities import Lister, ListFetcher
from backends.core.base import ListedFile
from backends.core.errors import BadRequest, NotFound
from backends.core.registry import Registry
from backends.destination import Destination

from .plan import MOST_FILES

#: at most this many folders are listed (a server that lists ever more folders ends here, not never)
MOST_FOLDERS = 200_000


def folder_files(request: Request, registry: Registry) -> list[ListedFile]:
    """Every file below the folder ``request.source``, with the size its server lists."""
    backend = registry.get(request.backend)
    if not isinstance(backend, ListFetcher) or not isinstance(backend, Lister):
        raise BadRequest(f"--cluster spreads folders of HTTP(S) and FTP servers and public studies; {backend.name} "
                         "folders are copied by one node for now (run the copy without --cluster).")
    return asyncio.run(_walk(backend, request.source, request.options))


async def _walk(backend, url: str, options) -> list[ListedFile]:
    todo: list[tuple[str, str, int]] = [(url if url.endswith("/") else url + "/", "", 0)]
    files: list[ListedFile] = []
    listed = 0
    while todo:
        folder, below, depth = todo.pop()
        listed += 1
        if listed > MOST_FOLDERS:
            raise BadRequest(f"{url} holds more than {MOST_FOLDERS} folders, more than one cluster job plans; copy "
                             "its folders one job each.")
        try:
            entries = await backend.listdir(folder, options)
        except NotFound:
            if depth or url.endswith("/"):
                raise
            raise BadRequest(f"{url} is not a folder its server lists (one file, or nothing there); --cluster "
                             "spreads folders and studies over nodes: copy one file without --cluster.") from None
        for entry in entries:
            if not entry.name or "/" in entry.name or entry.name in (".", ".."):
                continue  # not a name of this folder (the backend's own listing parser keeps these out too)
            if entry.is_dir:
                if depth + 1 > options.max_depth:
                    raise BadRequest(f"{url} goes deeper than {options.max_depth} folder levels (at {below}"
                                     f"{entry.name}/); give --max-depth N up to 64, or copy a folder below it.")
                todo.append((folder + quote(entry.name) + "/", f"{below}{entry.name}/", depth + 1))
            else:
                files.append(ListedFile(folder + quote(entry.name), below + entry.name, entry.size))
            if len(files) > MOST_FILES:
                raise BadRequest(f"{url} holds more than {MOST_FILES} files, more than one cluster job plans; copy "
                                 "its folders one job each.")
    return files


def claimed(files: list[ListedFile], dest: Path) -> list[ListedFile]:
    """``files`` named as they are saved below DEST, every name claimed once for the whole job."""
    destination = Destination(dest)
    destination.claim_all([f.name for f in files])
    return [replace(f, name=destination.claim(f.name)) for f in files]
