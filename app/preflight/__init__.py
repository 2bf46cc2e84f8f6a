"""The preflight: measure a path, recommend how to use it, remember the answer.

``run_preflight`` is the one entry point for the CLI (``labferry preflight``) and the
GUI's wizard (through the engine's ``preflight`` verb): it measures with the site's
backend (``measure``), reasons about the figures (``recommend``, pure), and records the
result in the store, where ``--streams auto``, the wizard and reports find it.
"""

from __future__ import annotations

from collections.abc import Callable

from app.store.advice import fresh_streams, max_age_days
from backends.core.abilities import BufferAdvisor
from backends.core.base import TransferOptions
from backends.core.errors import AuthError, BadRequest
from backends.core.urls import redact
from backends.host.hosttcp import host_tcp

from .measure import Progress, endpoint, measure
from .recommend import Analysis, analyse

__all__ = ["Analysis", "Progress", "run_preflight", "resolve_target", "max_age_days", "fresh_streams",
           "apply_to_site"]

def resolve_target(store, target: str, options: TransferOptions) -> tuple[str, str | None, TransferOptions]:
    """``site:NAME[/path]`` or a URL → (URL with any secret, site name, options with the site's settings).

    Through the front door's own expansion and merge (``app.requests``), as a transfer to the site would be."""
    from app.requests import expand_site, overrides_of, site_options

    url, site = expand_site(target, store)
    if site is None:
        return target, None, options
    path = target[5:].partition("/")[2]
    if site.protocol in ("https", "http") and not path:
        raise BadRequest(f"Name a large file on {site.name} to measure with (HTTPS needs one): "
                         f"site:{site.name}/path/to/a-file-of-1-GB-or-more.")
    return url, site.name, site_options(site, overrides_of(options))


def _needs_secret(store, site: str | None, url: str) -> bool:
    if not site:
        return False
    from urllib.parse import urlsplit

    profile = store.sites.get(site)
    return bool(profile and profile["user"] and not profile["key_file"] and urlsplit(url).password is None
                and profile["protocol"] in ("sftp", "scp"))


async def run_preflight(store, registry, url: str, options: TransferOptions, *, site: str | None = None,
                        quick: bool = False, on_progress: Callable[[Progress], None] | None = None,
                        backend_name: str | None = None) -> Analysis:
    """``backend_name``: the backend the user named (``--backend gridftp`` for a GridFTP server over ftp://)."""
    backend = registry.for_url(url, backend_name)
    host, _ = endpoint(url)
    try:
        measured = await measure(backend, url, options, quick=quick, on_progress=on_progress,
                                 max_streams=options.max_streams)
    except AuthError as exc:
        if _needs_secret(store, site, url):
            raise AuthError(f"The site {site} needs a password (or key passphrase) that Ferry does not have yet: "
                            f"add it with `labferry sites add {site} … --ask-secret` or in the site's profile, then "
                            "measure again.") from exc
        raise
    advice_rule = backend.buffer_advice if isinstance(backend, BufferAdvisor) else None
    analysis = analyse(
        url=redact(url), backend=backend.name, host=host, rtt=measured.rtt, sweep=measured.sweep, tcp=host_tcp(),
        log_rows=store.benchmarks.meaningful(host, backend.name), per_backend=store.benchmarks.best_by_backend(host),
        tcp_bs_rule=advice_rule, transports=measured.transports, max_streams=options.max_streams,
        sweep_cut=measured.cut,
    )
    analysis.seconds = measured.seconds
    analysis.notes = measured.notes + analysis.notes
    store.preflights.add(analysis.to_dict(), site=site)
    return analysis


def apply_to_site(store, name: str, result: dict):
    """Keep a preflight's advice in the site's profile: its streams, and GridFTP's TCP buffer (or none)."""
    from app.sites import SiteBook

    book = SiteBook(store)
    site = book.get(name)
    site.streams = str(result["recommended_streams"])
    if result.get("gridftp_tcp_bs"):
        site.options["tcp_bs"] = result["gridftp_tcp_bs"]
    else:
        site.options.pop("tcp_bs", None)
    return book.save(site)
