"""The front door: every transfer request Ferry makes is built here, and only here.

The CLI's ``copy``, the window's New transfer dialog and drops, preflight, compare, seeding and the
agent all hand what the user typed to ``resolve``. It expands ``site:NAME/…``, merges the settings that
apply — in rising order of weight: this installation's defaults, the site's profile, the benchmark log's
advice, and what the user chose for this transfer — resolves the destination and picks the backend.
One place means one answer: before it, a site's lab CA reached HTTPS downloads started from the CLI but
not those started from the window.

Merge rules (each has a unit test in ``tests/unit/test_requests.py``):

* streams: explicit, else the site's (when not ``auto``), else the defaults' (Settings), else ``auto``;
* ``auto`` starts from a fresh preflight of the host, else the fastest recent transfer there;
* the rate cap: the transfer's own, and the global one (Settings) that every job of the process pays
  together; the lower wins;
* the CA file and backend options: explicit over the site's; unknown or ill-typed options are refused;
* verify: explicit, else the defaults'; checksum, insecure, overwrite and sync: explicit only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from backends.core.abilities import Warmer
from backends.core.base import Checksum, ListedFile, TransferOptions
from backends.core.depth import MAX_DEPTH
from backends.core.errors import BadRequest, TransferError
from backends.core.options import check_backend_options
from backends.core.registry import Registry, scheme_of
from backends.core.registry import registry as default_registry
from backends.core.urls import check_authority, host_of, local_path_of
from backends.host import portable

from .packing import check_pack, check_unpack
from .routes import resolve_destination


@dataclass
class Overrides:
    """What the user chose for this one transfer (CLI flags, a dialog's fields); None: not chosen."""

    streams: int | str | None = None
    max_streams: int | None = None
    checksum: Checksum | None = None
    limit_rate: int | None = None  # bytes per second
    ca_file: str | None = None
    insecure: bool | None = None
    overwrite: bool | None = None
    sync: str | None = None
    verify: bool | None = None
    backend_options: dict = field(default_factory=dict)
    #: the backend the user named (``--backend``): GridFTP for a GridFTP server reached over ftp://
    backend: str | None = None
    #: relay through the agent on this SSH site (``--via site:NAME``); the far side is as that host sees it
    via: str | None = None
    keep: bool | None = None  # a relay keeps its spool copy (``--keep``)
    agent_command: str | None = None  # how Ferry starts on the relay's host (``--agent-command``)
    max_depth: int | None = None  # folder levels below the source (``--max-depth``)
    schedule: tuple | None = None  # a bandwidth schedule for this process's jobs (``--bwlimit``), over Settings'
    pack: bool | None = None  # send the folder as one tar made on demand (``--pack``)
    unpack: bool | None = None  # unpack the archive SRC into the folder DEST as it arrives (``--unpack``)


@dataclass(frozen=True)
class Defaults:
    """This installation's settings: what applies when neither the site nor the user says otherwise."""

    streams: int | str = "auto"
    limit_rate: int | None = None  # the global cap, for every job
    verify: bool = True
    schedule: tuple = ()  # the global bandwidth schedule (``backends.core.schedule``)

    @classmethod
    def from_settings(cls, settings: dict) -> Defaults:
        from app.units import parse_rate, parse_schedule

        cap, plan = settings.get("limit_rate"), settings.get("rate_schedule")
        return cls(streams=parse_streams(str(settings.get("default_streams") or "auto")),
                   limit_rate=parse_rate(cap) if cap else None, verify=bool(settings.get("verify", True)),
                   schedule=parse_schedule(plan) if plan else ())


@dataclass(frozen=True)
class Request:
    """One resolved transfer, ready for ``Engine.submit``."""

    source: str  # with a site's secret, in memory only
    dest: str
    options: TransferOptions
    backend: str
    site: object | None = None  # the app.sites.Site used, if any

    def submit_to(self, engine):
        return engine.submit(self.source, self.dest, self.options, self.backend)

    def submit_args(self) -> tuple:
        """For the GUI's bridge, which calls the engine's ``submit`` verb without waiting."""
        return self.source, self.dest, self.options, self.backend


def parse_streams(text: str | int) -> int | str:
    """``auto`` or 1-64, from a flag, a setting or a site profile."""
    if text == "auto" or isinstance(text, int) and 1 <= text <= 64:
        return text
    text = str(text)
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise BadRequest(f"Streams take a number from 1 to 64, or auto; got '{text}'.")
    return int(text)


def resolve(source: str, dest: str | os.PathLike, overrides: Overrides | None = None, *, store=None,
            defaults: Defaults | None = None, registry: Registry | None = None, sites=None,
            advice: bool = True, strict: bool = True) -> Request:
    """Build the one request for SRC → DEST (see the module's rules). ``store`` (an open ``app.store.Store``)
    is read for sites and the benchmark log; ``sites`` (a ``SiteBook``) replaces its site book (tests, a
    keyring stand-in). ``advice``: look up the benchmark log for ``auto`` (off for measurements). ``strict``:
    refuse options the backend does not declare (off: drop them, for a comparison across protocols)."""
    overrides = overrides or Overrides()
    defaults = defaults or Defaults()
    registry = registry or default_registry
    source, dest = local_path_of(source), local_path_of(os.fspath(dest))  # file:///C:/x is a local path
    _check_authorities(source, dest)
    if overrides.via:
        if overrides.pack or overrides.unpack:
            raise BadRequest("--pack and --unpack do not go through a relay yet: copy the archive with --via, then "
                             "run labferry unpack (or pack with labferry pack first).")
        return _resolve_relay(source, dest, overrides, defaults, registry, store, sites)
    source, dest, site = _expand_sites(source, dest, store, sites)
    _check_authorities(source, dest)
    options = _merge(overrides, defaults, site)
    source = _absolute_local(source)
    backend = registry.for_route(source, dest, overrides.backend)
    if options.pack and options.unpack:
        raise BadRequest("--pack and --unpack go in opposite directions; give one of them.")
    if options.pack:
        check_pack(source, dest, backend)
    options = replace(options, backend_options=check_backend_options(backend, options.backend_options,
                                                                              strict=strict))
    if advice and store is not None:
        from app.store.advice import advised

        options = advised(store, options, _peer(source, dest), backend.name)
    given = dest = _absolute_local(dest, keep_slash=True)
    dest = resolve_destination(source, dest)
    if options.unpack:
        check_unpack(source, dest, given)
    elif "://" not in dest and Path(dest) != Path(given):
        options = replace(options, name_from_source=True)  # DEST was a folder: the name is the source's
    return Request(source, dest, options, backend.name, site)


def _check_authorities(*locations: str) -> None:
    """Hosts and users checked before any backend builds a command from them (``ssh -oX`` taken as a host)."""
    for location in locations:
        if "://" in location:
            check_authority(location)


#: the most streams each hop of a relay opens (unless the user says otherwise). Each hop is a shorter path than
#: the whole, so fewer streams fill it, and the relay's host carries the SSH ends of both hops on one CPU:
#: measured on wanem's relay path (10 ms/1e-2 then 100 ms clean, 4 GiB), hops left to grow to 64 streams each
#: moved 417 Mbit/s up and 414 down; 16 and 8 moved 520 and 611 (docs/benchmarks.md)
RELAY_MAX_STREAMS = 16


def resolve_here(source: str, dest: str | os.PathLike, overrides: Overrides | None = None, **kw) -> Request:
    """``resolve`` against this installation's own store: its sites, its Settings as the defaults, its benchmark
    log (the CLI's commands and the agent; the window passes the settings it holds)."""
    from app.store import Store

    with Store() as store:
        return resolve(source, dest, overrides, store=store, defaults=Defaults.from_settings(store.settings.all()),
                       **kw)


def _resolve_relay(source: str, dest: str, overrides: Overrides, defaults: Defaults, registry: Registry, store,
                   sites) -> Request:
    """SRC → DEST through the agent on the via site (``app.relay``). The far side (DEST of an upload, SRC of a
    download) is left as the agent's host sees it: its own sites and front door resolve it there. This side's
    hop takes the transfer's streams; the far hop the checks the user chose and the agent's own stream choice;
    a rate cap holds on both."""
    via = overrides.via.removeprefix("site:").strip("/")
    if not via:
        raise BadRequest("Give the relay as --via site:NAME (an SSH site whose host runs Ferry).")
    if sites is None:
        from app.sites import SiteBook
        from app.store import Store

        with Store() as own:
            site = SiteBook(store or own).get(via)
    else:
        site = sites.get(via)
    if site.protocol not in ("sftp", "scp"):
        raise BadRequest(f"A relay goes through an SSH site's host; site {via} is {site.protocol}. Use an SSH site "
                         "of the same host.")
    uploads = not scheme_of(source) and not source.startswith("site:")
    if uploads:
        if scheme_of(dest) == "" and not dest.startswith("site:"):
            raise BadRequest("A relayed upload goes to a server: give DEST as an address or site:NAME/path, as the "
                             "relay's host sees it.")
        source = _absolute_local(source)
    else:
        if scheme_of(dest) or dest.startswith("site:"):
            raise BadRequest("A relay copies between this computer and a server, one side each; give DEST here.")
        dest = resolve_destination(source, dest)
    hop_streams = overrides.max_streams or RELAY_MAX_STREAMS
    far = Overrides(checksum=overrides.checksum, limit_rate=overrides.limit_rate, ca_file=overrides.ca_file,
                    insecure=overrides.insecure, max_streams=hop_streams,
                    overwrite=overrides.overwrite, sync=overrides.sync, verify=overrides.verify,
                    backend_options=dict(overrides.backend_options), backend=overrides.backend)
    near = replace(overrides, backend_options={}, checksum=None, ca_file=None, max_streams=hop_streams)
    options = _merge(near, defaults, None)
    relay = registry.get("relay")
    settings = {"via": via, "agent_command": overrides.agent_command or "labferry", "keep": bool(overrides.keep),
                "far": overrides_to_wire(far), "compress": overrides.backend_options.get("compress")}
    options = replace(options, backend_options=check_backend_options(relay, settings))
    return Request(source, dest, options, relay.name, site)


def resolve_list(label: str, files: list[ListedFile], folder: str | os.PathLike,
                 overrides: Overrides | None = None, *, store=None, defaults: Defaults | None = None,
                 registry: Registry | None = None) -> Request:
    """Build the one request for a list of files into ``folder`` (an accession's: ``label`` names it in the
    queue and the history): the same merge as ``resolve``; the backend is the one every address shares."""
    if not files:
        raise BadRequest(f"{label} names no file to fetch.")
    overrides = overrides or Overrides()
    registry = registry or default_registry
    backends = {registry.for_route(address, str(folder), overrides.backend).name
                for address in {_origin(f.address): f.address for f in files}.values()}
    if len(backends) > 1:
        raise BadRequest(f"{label} mixes addresses of several protocols ({', '.join(sorted(backends))}); give one "
                         "list per protocol.")
    backend = registry.get(backends.pop())
    options = _merge(overrides, defaults or Defaults(), None)
    options = replace(options, files=tuple(files),
                      backend_options=check_backend_options(backend, options.backend_options))
    host = _peer(files[0].address, "")
    if store is not None and options.streams == "auto" and not options.initial_streams and host:
        from app.store.advice import advised_streams

        options = replace(options, initial_streams=advised_streams(store, host, backend.name))
    return Request(label, str(Path(folder).expanduser().absolute()), options, backend.name)


def warm_up(address: str, overrides: Overrides | None = None, connections: int = 16, *,
            registry: Registry | None = None) -> None:
    """Have the backend for ``address`` open ``connections`` to its host ahead of a list job that will fetch from
    it, while the job's catalogue is still being asked (``Warmer``); nothing where the backend cannot."""
    found = _warmer(address, overrides or Overrides(), registry or default_registry)
    if found is not None:
        backend, options = found
        backend.warm(address, replace(options, backend_options=check_backend_options(backend, options.backend_options)),
                     connections)


def ask_ahead(address: str, size: int, overrides: Overrides | None = None, *,
              registry: Registry | None = None) -> bool:
    """Have the backend for ``address`` ask for it (``size`` bytes) on a connection ``warm_up`` opened, while the
    job's catalogue is still arriving (``Warmer``); False when nothing was sent."""
    found = _warmer(address, overrides or Overrides(), registry or default_registry)
    return found is not None and found[0].ask_ahead(address, found[1], size)


def _warmer(address: str, overrides: Overrides, registry: Registry) -> tuple[Warmer, TransferOptions] | None:
    """The backend for ``address`` and its options, where it can open connections ahead (``Warmer``)."""
    try:
        backend = registry.for_route(address, "", overrides.backend)
    except TransferError:
        return None
    return (backend, _merge(overrides, Defaults(), None)) if isinstance(backend, Warmer) else None


def _origin(address: str) -> str:
    """What picks an address's backend: its scheme and authority (``scheme://host:port``; the whole of one
    without ``//``). A study's thousand files on one host are one look, not a thousand (~25 ms)."""
    scheme, sep, rest = address.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0].split('#', 1)[0]}" if sep else address


def site_options(site, overrides: Overrides | None = None) -> TransferOptions:
    """The options for reaching ``site`` outside a transfer (browsing, testing it, a preflight): the same
    merge as ``resolve``, so a site's lab CA or key is used there too."""
    return _merge(overrides or Overrides(), Defaults(), site)


def overrides_of(options: TransferOptions) -> Overrides:
    """A ``TransferOptions`` a caller already made, read as explicit choices (``auto`` and defaults: none)."""
    return Overrides(
        streams=None if options.streams == "auto" else options.streams, max_streams=options.max_streams,
        checksum=options.checksum, limit_rate=options.limit_rate, ca_file=options.ca_file,
        insecure=options.insecure or None, overwrite=options.overwrite or None, sync=options.sync,
        verify=None if options.verify else False, backend_options=dict(options.backend_options),
    )


def expand_site(location: str, store) -> tuple[str, object | None]:
    """``site:NAME/path`` → (URL with the site's secret, the site); anything else unchanged."""
    source, _, site = _expand_sites(location, "", store, None)
    return source, site


def _expand_sites(source: str, dest: str, store, sites):
    """``site:NAME/path`` on either side → the site's URL (its secret only in memory) and the site."""
    if not (source.startswith("site:") or dest.startswith("site:")):
        return source, dest, None
    if sites is None:
        from app.sites import SiteBook

        if store is None:
            from app.store import Store

            with Store() as own:
                return _expand_sites(source, dest, own, SiteBook(own))
        sites = SiteBook(store)
    source, site_a = sites.expand(source)
    dest, site_b = sites.expand(dest)
    return source, dest, site_a or site_b


def _merge(overrides: Overrides, defaults: Defaults, site) -> TransferOptions:
    site_options = site.backend_options() if site else {}
    site_ca = site_options.pop("ca_file", None)
    explicit = dict(overrides.backend_options)
    explicit_ca = explicit.pop("ca_file", None)
    streams = overrides.streams
    if streams is None:
        streams = site.streams if site and site.streams != "auto" else defaults.streams
    return TransferOptions(
        streams=parse_streams(streams),
        max_streams=overrides.max_streams or 64,
        checksum=overrides.checksum,
        limit_rate=overrides.limit_rate,
        shared_limit=defaults.limit_rate,
        shared_schedule=overrides.schedule if overrides.schedule is not None else defaults.schedule,
        ca_file=overrides.ca_file or explicit_ca or site_ca,
        insecure=bool(overrides.insecure),
        overwrite=bool(overrides.overwrite),
        sync=overrides.sync,
        verify=defaults.verify if overrides.verify is None else overrides.verify,
        backend_options=site_options | explicit,
        max_depth=overrides.max_depth or MAX_DEPTH,
        site=site.name if site else None,
        pack=bool(overrides.pack),
        unpack=bool(overrides.unpack),
    )


def _absolute_local(location: str, *, keep_slash: bool = False) -> str:
    """A local source or destination as an absolute path (a queued job may run from another folder), in the form
    the OS opens at any length (Windows: ``\\\\?\\C:\\…``, ``portable.long_path``); with ``keep_slash``, a
    trailing separator (DEST is a folder) is kept."""
    if scheme_of(location) or "://" in location or location.startswith("site:"):
        return location
    path = str(portable.long_path(Path(location).expanduser().absolute()))
    folder = keep_slash and location.endswith(("/", os.sep)) and not path.endswith(os.sep)
    return path + os.sep if folder else path


def _peer(source: str, dest: str) -> str | None:
    """The host at the other end (the source's, else the destination's), whose measurements advise the job."""
    return host_of(source) if "://" in source else host_of(dest) if "://" in dest else None


def overrides_to_wire(overrides: Overrides) -> dict:
    """``Overrides`` as JSON, for an agent (the checksum as its three fields): what the front door takes."""
    from dataclasses import asdict

    return {k: v for k, v in asdict(overrides).items() if v not in (None, {}, "")}


def overrides_from_wire(data: dict | None) -> Overrides:
    """``Overrides`` from the JSON a desktop sent (``overrides_to_wire``); unknown keys are left out."""
    from backends.core.base import Checksum

    data = dict(data or {})
    if isinstance(data.get("checksum"), dict):
        data["checksum"] = Checksum(**data["checksum"])
    if isinstance(data.get("schedule"), list):  # JSON's lists: the schedule's entries as the desktop parsed them
        from backends.core.schedule import MOST

        data["schedule"] = tuple(tuple(entry) for entry in data["schedule"][:MOST])
    known = set(Overrides.__dataclass_fields__)
    return Overrides(**{k: v for k, v in data.items() if k in known and v is not None})
