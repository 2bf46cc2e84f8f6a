"""``labferry preflight`` and ``labferry compare``: measure a path, and rank protocols on it.

Both run on their own asyncio loop in this process (no queue: nothing here is a job)
and record their results in the store, where ``--streams auto`` and the GUI find them.
Progress goes to stderr; the answer to stdout, with ``--json`` as one object on the last line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from app.requests import parse_streams
from app.units import counted, format_ms
from backends.core.base import TransferOptions

from .copy import add_ssh_arguments, backend_options


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ca-file", metavar="PEM", help="trust this certificate authority (a lab's own CA)")
    p.add_argument("--insecure", action="store_true", help="do not verify TLS certificates (only on a trusted network)")
    add_ssh_arguments(p)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object on the last stdout line")


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "preflight", help="measure the path to a site and recommend streams, protocol and TCP settings",
        description="Measure round trips and a short sweep of stream counts to a site (about 15 s; about 25 s on "
                    "gsiftp://, where UDT is measured too), then "
                    "recommend the streams to use, the protocol, and the TCP settings this host needs, with "
                    "the exact sysctl lines for IT. HTTPS needs a large file to read; SSH and GridFTP read "
                    "zeros on the server when no file is named.")
    p.add_argument("target", metavar="URL|site:NAME[/path]")
    p.add_argument("--quick", action="store_true", help="shorter steps (about half the time; rougher figures)")
    p.add_argument("--backend", metavar="NAME", help="measure with this backend (gridftp for a GridFTP server "
                                                      "reached over ftp://)")
    p.add_argument("--max-streams", type=int, default=64, metavar="N", help="sweep no further than N streams")
    p.add_argument("--if-older", type=float, nargs="?", const=0.0, metavar="DAYS",
                   help="measure only if the last measurement of this host is older than DAYS (alone: the "
                        "Settings' re-measure age, 7 days by default); else show that one")
    p.add_argument("--via", metavar="site:NAME",
                   help="also measure the relay through the agent on that SSH site's host (the first hop from here, "
                        "the second by the agent) and say whether --via would be faster")
    p.add_argument("--agent-command", default="labferry", metavar="CMD",
                   help="with --via: how Ferry is started on that host")
    p.add_argument("--apply", action="store_true",
                   help="save the recommended streams (and GridFTP TCP buffer) in the site's profile")
    _common(p)
    p.set_defaults(handler=run_preflight)

    c = sub.add_parser(
        "compare", help="copy the same file through several protocols, in turn, and rank them",
        description="Each URL is the same file on the same host through another protocol (https://, sftp://, "
                    "ftp://…). Every round copies it through each, in rotating order, into a scratch folder "
                    "that is removed; results go to the benchmark log.")
    c.add_argument("urls", nargs="+", metavar="URL")
    c.add_argument("--rounds", type=int, default=3, metavar="N")
    c.add_argument("--streams", default="auto", metavar="N|auto")
    c.add_argument("--plot", metavar="FILE.png", help="also draw throughput and efficiency per protocol")
    _common(c)
    c.set_defaults(handler=run_compare)


def _options(args: argparse.Namespace, streams="auto", max_streams: int = 64) -> TransferOptions:
    return TransferOptions(streams=streams, max_streams=max_streams, ca_file=args.ca_file, insecure=args.insecure,
                           backend_options=backend_options(args))


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_preflight(args: argparse.Namespace) -> int:
    import asyncio

    from app.preflight import resolve_target
    from app.preflight import run_preflight as measure_and_advise
    from app.preflight.measure import endpoint
    from app.store import Store
    from backends.core.errors import BadRequest
    from backends.core.registry import registry

    if not 1 <= args.max_streams <= 64:
        raise BadRequest("--max-streams takes a number from 1 to 64.")
    if args.via:
        return _run_relay(args)
    with Store() as store:
        url, site, options = resolve_target(store, args.target, _options(args, max_streams=args.max_streams))
        if args.if_older is not None:
            from app.preflight import max_age_days

            age = args.if_older or max_age_days(store)
            backend = registry.for_url(url, args.backend)
            cached = store.preflights.latest(endpoint(url)[0], backend.name, max_age_days=age)
            if cached:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(cached["measured_at"]))
                _say(f"labferry: reusing the measurement of {when} (younger than {age:g} days).")
                return _show(cached, args.json)
        analysis = asyncio.run(measure_and_advise(
            store, registry, url, options, site=site, quick=args.quick, backend_name=args.backend,
            on_progress=(lambda p: _say(f"  {p.message}")) if sys.stderr.isatty() else None))
        result = analysis.to_dict()
        if args.apply:
            _apply(store, site, result)
    return _show(result, args.json)


def _run_relay(args: argparse.Namespace) -> int:
    import asyncio

    from app.agent.relay_preflight import measure_relay
    from app.store import Store
    from backends.core.registry import registry

    with Store() as store:
        result = asyncio.run(measure_relay(
            store, registry, args.target, _options(args, max_streams=args.max_streams), args.via, args.agent_command,
            quick=args.quick, on_progress=(lambda p: _say(f"  {p.message}")) if sys.stderr.isatty() else None))
    for label, key in (("Direct", "direct"), ("Last mile", "first_hop"), ("Backbone", "second_hop")):
        hop = result[key]
        print(f"  {label:<13} {hop['host']}: {hop['mbps']:.0f} Mbit/s with {counted(hop['streams'], 'stream')}, "
              f"round trip {format_ms(hop['rtt_ms'])}")
    print(f"  Relay         {result['why']}")
    if args.json:
        print(json.dumps(result))
    return 0


def _apply(store, site: str | None, result: dict) -> None:
    from app.preflight import apply_to_site
    from backends.core.errors import BadRequest

    if not site:
        raise BadRequest("--apply saves the recommendation in a site's profile: measure site:NAME instead of a URL.")
    profile = apply_to_site(store, site, result)
    _say(f"labferry: site {site} now uses {counted(profile.streams, 'stream')}.")


def _show(result: dict, as_json: bool) -> int:
    from app.preflight.recommend import streams_phrase

    rtt = result["rtt"]
    sweep = "  ".join(f"{n}: {v:.0f}" for n, v in result["sweep"].items())
    print(f"Path to {result['host']} ({result['backend']}), measured in {result['seconds']:.1f} s")
    print(f"  Round trip    {format_ms(rtt['min_ms'])} (median {format_ms(rtt['median_ms'])}, jitter "
          f"{format_ms(rtt['jitter_ms'])})")
    print(f"  Sweep         streams: Mbit/s  {sweep}")
    print(f"  Bottleneck    about {result['bottleneck_mbps']:.0f} Mbit/s; bandwidth-delay product "
          f"{result['bdp_bytes'] / 1e6:.1f} MB")
    print(f"  Loss          {result['loss_note']}")
    print(f"  Use           {streams_phrase(result['recommended_streams'])} ({result['streams_why']})")
    print(f"  Protocol      {result['recommended_backend']}: {result['backend_why']}")
    if result.get("recommended_transport"):
        print(f"  Transport     {result['recommended_transport']}: {result['transport_why']}")
    if result.get("tcp_bs_why") and result["backend"] == "gridftp":
        print(f"  GridFTP       {result['tcp_bs_why']}")
    for note in result.get("notes") or []:
        print(f"  Note          {note}")
    if result["sysctl"]:
        print("  This host's TCP settings fall short of the path. For IT (/etc/sysctl.d/90-ferry.conf, then "
              "`sysctl --system`):")
        for item in result["sysctl_reasons"]:
            print(f"    {item['line']:<48} # {item['reason']}")
    else:
        print("  This host's TCP settings already suit this path.")
    if as_json:
        print(json.dumps(result))
    return 0


def run_compare(args: argparse.Namespace) -> int:
    import asyncio

    from app.preflight.compare import compare
    from app.store import Store
    from backends.core.errors import BadRequest
    from backends.core.registry import registry

    if not 1 <= args.rounds <= 20:
        raise BadRequest("--rounds takes a number from 1 to 20.")
    options = _options(args, parse_streams(args.streams))

    def said(run) -> None:
        outcome = run.error or f"{run.mbps:.0f} Mbit/s ({counted(run.streams, 'stream')}, {run.seconds:.1f} s)"
        _say(f"  round {run.round}  {run.backend:<8} {outcome}")

    if args.plot:  # said before the measuring, not after it
        from .desktop import need_desktop

        need_desktop("--plot")
    with Store() as store:
        result = asyncio.run(compare(store, registry, args.urls, options, rounds=args.rounds, on_run=said))
    table = result.table()
    print(f"Protocols to {result.host}, {args.rounds} round(s) each (median, best, efficiency = median / best rate "
          "of any protocol):")
    for row in table:
        failed = f", {row['failed']} failed: {'; '.join(row['errors'])}" if row["failed"] else ""
        print(f"  {row['backend']:<8} {row['median_mbps']:>8.0f} Mbit/s  best {row['best_mbps']:.0f}  "
              f"efficiency {row['efficiency'] * 100:.0f} %  {row['url']}{failed}")
    if args.plot:
        from app.ui.report_charts import compare_chart

        with open(args.plot, "wb") as fh:
            fh.write(compare_chart(result.to_dict()))
        _say(f"labferry: plot written to {args.plot}")
    if args.json:
        print(json.dumps(result.to_dict()))
    return 0 if any(row["median_mbps"] for row in table) else 1
