"""The relay's preflight (``labferry preflight TARGET --via site:NAME``): the direct path and the first hop
measured here, the second hop by the agent on the relay's host, and ``preflight.relay.verdict`` on the three.

It lives with the agent, not the preflight: it is the one measurement that asks an agent, and the agent's own
server runs the preflight, so the preflight package may not reach back into the agent's.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from app.preflight import resolve_target, run_preflight
from app.preflight.relay import verdict
from backends.core.base import TransferOptions


async def measure_relay(store, registry, target: str, options: TransferOptions, via: str, agent_command: str, *,
                        quick: bool = False, on_progress=None) -> dict:
    """Measure the direct path, the first hop and (on the agent) the second; returns ``verdict``'s answer with
    the three preflights under ``analyses``."""
    from app.requests import RELAY_MAX_STREAMS, site_options
    from app.sites import SiteBook

    from .client import site_client

    name = via.removeprefix("site:").strip("/")
    site = SiteBook(store).get(name)
    url, target_site, target_options = resolve_target(store, target, options)
    direct = await run_preflight(store, registry, url, target_options, site=target_site, quick=quick,
                                 on_progress=on_progress)
    hop_options = replace(site_options(site), max_streams=min(options.max_streams, 64))
    first = await run_preflight(store, registry, site.url(), hop_options, site=name, quick=quick,
                                on_progress=on_progress)
    if on_progress:
        from app.preflight.measure import Progress

        on_progress(Progress("sweep", f"the agent on {site.host} measures {target} from there"))

    def far() -> dict:
        with site_client(site, agent_command) as client:
            return client.call("preflight", target=target, quick=quick, max_streams=options.max_streams)

    second = await asyncio.to_thread(far)
    result = verdict(direct.to_dict(), first.to_dict(), second, f"site:{name}", RELAY_MAX_STREAMS)
    result["analyses"] = {"direct": direct.to_dict(), "first_hop": first.to_dict(), "second_hop": second}
    return result

