"""One globus-url-copy run as the engine sees it: progress events, stream counts, errors in words."""

from __future__ import annotations

import posixpath
import shutil
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from ..core.base import Sink
from ..core.errors import BadAnswer, Unavailable
from ..core.made import Made
from . import guc
from .faults import explain

INSTALL_HINT = ("Install the Globus command-line tools: on Debian/Ubuntu 'apt install globus-gass-copy-progs', "
                "on RHEL/Fedora 'dnf install globus-gass-copy-progs' (EPEL), on macOS/conda "
                "'conda install -c conda-forge globus-gass-copy'.")


def tool() -> str:
    path = shutil.which(guc.TOOL)
    if not path:
        raise Unavailable(f"GridFTP transfers need {guc.TOOL}, which is not installed. {INSTALL_HINT}")
    return path


@dataclass
class Copy:
    """A run of globus-url-copy from ``source`` to ``dest`` (its own URL syntax)."""

    source: str
    dest: str
    options: guc.Options
    sink: Sink
    total: int | None
    #: folder runs: size of each file by its path relative to the source root
    sizes: dict[str, int] = field(default_factory=dict)
    source_root: str = ""
    done: int = 0
    #: a file made on demand (``--pack``) fed to the tool's stdin; ``source`` is then ``-``
    feed: Made | None = None

    def __post_init__(self) -> None:
        self._announced: list[str] = []
        self._current_source = ""
        per_file = 1 if self.options.udt else self.options.streams
        self._running_streams = per_file * max(1, self.options.concurrency)

    async def run(self) -> None:
        progress = guc.Progress(self._on_bytes, self._on_file, self._on_source)
        status, err = await guc.run(guc.argv(self.options, self.source, self.dest, tool()), progress, self.feed)
        if status != 0:
            raise explain(err, source=self.source, dest=self.dest)
        if self.total is not None:
            self.done = self.total
            self.sink.progress(self.total, self.total, self._running_streams)

    def _on_source(self, url: str) -> None:
        self._current_source = url

    def _on_file(self, name: str) -> None:
        if not self.sizes:
            return
        folder = unquote(urlsplit(self._current_source).path)
        full = posixpath.join(folder, name)
        rel = posixpath.relpath(full, self.source_root) if self.source_root else name
        self._announced.append(rel)

    def _on_bytes(self, current: int) -> None:
        current += self.options.offset  # a resumed download counts from what was kept
        if not self.sizes and self.total is not None and current > self.total:
            raise BadAnswer(f"The server sent more than the {self.total} bytes it announced for {self.source}; "
                            "Ferry stopped the copy at once. A server that does this is broken or hostile: ask its "
                            "owner.")
        if self.sizes:
            # files announced before the last `cc` have finished; the newest ones are in flight
            finished = self._announced[:-max(1, self.options.concurrency)]
            current += sum(self.sizes.get(rel, 0) for rel in finished)
        if self.total is not None:
            current = min(current, self.total)
        if current > self.done:
            self.done = current
            self.sink.progress(self.done, self.total, self._running_streams)
