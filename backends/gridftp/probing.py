"""Short reads for a preflight: globus-url-copy ``-t`` into /dev/null, over TCP streams or UDT.

With no file named (``gsiftp://host/``), the server reads ``/dev/zero``: the classic GridFTP memory-to-memory
test, which needs no test file and no disk on either side. globus-url-copy reports about every 2 s, each report
with the rate over its interval ("inst"): the last one is past slow start, which the run's average is not.
"""

from __future__ import annotations

import time

from ..core.base import ProbeResult
from ..host.netprobe import connect_time
from . import guc
from .address import GridUrl
from .copy import tool
from .faults import explain

#: the shortest probe worth running: globus-url-copy's -t counts whole seconds and -vb reports every ~2 s
PROBE_MIN_S = 5
#: and at least this many round trips: on gsiftp:// the logins of the control and data channels take several,
#: and at 200 ms / 1e-3 five-second probes with 1 and 2 streams ended before their first byte (0 Mbit/s)
PROBE_RTTS = 40
#: UDT grows its rate more slowly than many TCP streams: measured at 50 ms/1e-4, its 2-second reports read 64,
#: 50 and 56 MiB/s over an 8-second probe, and a 5-second one ends on the first
UDT_PROBE_MIN_S = 8


async def probe(url: str, streams: int, seconds: float, *, udt: bool = False) -> ProbeResult:
    """Read ``url`` for ``seconds`` (at least the minimum) with ``streams`` TCP streams, or one UDT flow."""
    remote = GridUrl.parse(url)
    if remote.named_folder:
        remote = remote.child("dev/zero")
    rtt = await connect_time(remote.host, remote.port)
    opts = guc.Options(streams=1 if udt else streams, udt=udt,
                       seconds=max(seconds, UDT_PROBE_MIN_S if udt else PROBE_MIN_S, PROBE_RTTS * (rtt or 0.0)))
    seen = [0]
    progress = guc.Progress(lambda n: seen.__setitem__(0, n))
    began = time.monotonic()
    status, err = await guc.run(guc.argv(opts, remote.text(), "file:///dev/null", tool()), progress)
    if status != 0 and not seen[0]:
        raise explain(err, source=url, dest="/dev/null")
    flows = 1 if udt else streams
    if progress.last_inst:
        return ProbeResult(flows, int(progress.last_inst), 1.0, rtt * 1000 if rtt else None)
    return ProbeResult(flows, seen[0], time.monotonic() - began, rtt * 1000 if rtt else None)
