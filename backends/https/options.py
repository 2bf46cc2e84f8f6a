"""The HTTP(S) backend's own options, declared for the front door (``backends.core.options``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.options import option

#: long transfers must never time out as a whole; a silent socket must (``--stall-timeout``)
STALL_SECONDS = 60.0
CONNECT_SECONDS = 30.0
USER_AGENT = "labferry"
#: a file of a folder or a list below this comes with one GET; from here, with parallel ranges, resumable
LARGE_FROM = 16 * 1024 * 1024
#: a small file reaches its part file and the progress this much at a time, not once a TLS record (~16 KiB):
#: each is a system call and a walk over the files in flight
TELL_EVERY = 512 * 1024


@dataclass(frozen=True)
class HttpsOptions:
    web_page: bool = option(False, "save what the server sends even when it is a web page (by default an HTML "
                                   "page where a file was expected, such as a login or error page, is refused)",
                            flag="--web-page")
    stall_seconds: float = option(STALL_SECONDS, "a stream that gets no data for this long is a fault, retried "
                                                 "(default 60)", flag="--stall-timeout", metavar="SECONDS")
    proxy: str | None = option(None, "send HTTP(S) through this proxy (http://[USER:PASSWORD@]HOST:PORT); without it "
                                     "Ferry follows HTTPS_PROXY, HTTP_PROXY and NO_PROXY, as curl does",
                               flag="--proxy", metavar="URL")
    allow_downgrade: bool = option(False, "follow a redirect from https to plain http (refused by default: the file "
                                          "would travel unencrypted; a password is never sent over http)",
                                   flag="--allow-downgrade")
    share_connections: bool = option(False, "reuse warm connections with the other jobs of this process: for many "
                                            "small files from one server (an accession's small runs); large files "
                                            "do better on fresh ones")
