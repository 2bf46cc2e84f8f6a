"""The FTP backend's own options, declared for the front door (``backends.core.options``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.options import option


@dataclass(frozen=True)
class FtpOptions:
    stall_seconds: float = option(60.0, "a stream that gets no data for this long is a fault, retried (default 60)",
                                  flag="--stall-timeout", metavar="SECONDS")
    max_handshakes: int = option(16, "FTP connections opened at once, per server (default 16; vsftpd queues only 32 "
                                 "connections, and one past that may hang unanswered)", flag="--max-handshakes",
                                 metavar="N")
