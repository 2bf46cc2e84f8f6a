"""``labferry torrent create`` and ``labferry seed``; copy's BitTorrent options live here too."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from app.cli.progress import ProgressLine
from app.units import format_bytes, format_rate, parse_rate
from backends.core.errors import BadRequest, LocalError

from .flags import add_option_flags, options_from_flags


def add_torrent_arguments(p: argparse.ArgumentParser) -> None:
    """Options for fetching (copy) and seeding: the torrent backend's declared options."""
    from backends.torrent.options import TorrentOptions

    add_option_flags(p.add_argument_group("BitTorrent (.torrent files and magnet: links)"), TorrentOptions)


def torrent_options(args: argparse.Namespace) -> dict:
    from backends.torrent.options import TorrentOptions

    return options_from_flags(args, TorrentOptions)


def add_parsers(sub) -> None:
    t = sub.add_parser("torrent", help="make .torrent files for lab-to-lab swarms")
    verbs = t.add_subparsers(dest="verb", metavar="VERB", required=True)
    c = verbs.add_parser("create", help="make a .torrent for a file or folder (BitTorrent v2: SHA-256 pieces)")
    c.add_argument("path", metavar="PATH")
    c.add_argument("-o", "--output", metavar="FILE.torrent", help="default: PATH's name + .torrent, here")
    c.add_argument("--web-seed", action="append", metavar="URL", help="an http(s) URL serving the same data")
    c.add_argument("--tracker", action="append", metavar="URL")
    public = c.add_mutually_exclusive_group()
    public.add_argument("--private", action="store_true", default=True, help="(default) never on DHT or PEX")
    public.add_argument("--public", action="store_false", dest="private", help="allow DHT and peer exchange")
    c.add_argument("--hybrid", action="store_true",
                   help="also SHA-1 pieces, for BitTorrent v1 clients (the default is v2 only: half the hashing)")
    c.add_argument("--tls", action="store_true",
                   help="a TLS torrent: peers must hold a certificate from the lab CA (Ferry's own, made on first "
                        "use, or --ca); TLS instead of RC4, and plaintext peers refused. For swarms of Ferry peers")
    _ca_arguments(c)
    c.set_defaults(handler=run_create)

    k = verbs.add_parser("cert", help="issue a peer certificate from the lab CA, for a collaborator's TLS torrents")
    k.add_argument("output", metavar="NAME", help="writes NAME.pem (the certificate) and NAME.key (its key)")
    k.add_argument("--torrent-name", default="*", metavar="NAME",
                   help="the torrent it is for (its name, as in the .torrent); default * (every torrent of the lab)")
    k.add_argument("--days", type=int, default=365, help="how long it is valid (default 365)")
    _ca_arguments(k)
    k.set_defaults(handler=run_cert)

    s = sub.add_parser("seed", help="serve a torrent's data to other labs until stopped (Ctrl-C)")
    s.add_argument("torrent", metavar="FILE.torrent")
    s.add_argument("--data", required=True, metavar="PATH", help="the torrent's file or folder here")
    s.add_argument("--listen", default="0.0.0.0:6881", metavar="ADDR:PORT",
                   help="first listening port; --connections sessions take the next ones (default 0.0.0.0:6881)")
    s.add_argument("--connections", type=int, default=8, metavar="K",
                   help="sessions on consecutive ports, so each fetcher can open K connections (default 8)")
    s.add_argument("--encryption", choices=("required", "preferred", "off"), default="required")
    s.add_argument("--discovery", action="store_true", help="also announce to trackers, DHT and local discovery")
    s.add_argument("--upload-limit", metavar="RATE", help="cap the upload rate (50M = 50 MiB/s, 400Mbit)")
    s.add_argument("--tls-cert", metavar="FILE.pem",
                   help="a TLS torrent: this peer's certificate (default: Ferry's own)")
    s.add_argument("--tls-key", metavar="FILE.key", help="the key of --tls-cert")
    s.set_defaults(handler=run_seed)


def _ca_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ca", metavar="FILE.pem", help="the lab CA's certificate (default: Ferry's own lab CA)")
    p.add_argument("--ca-key", metavar="FILE.key", help="the lab CA's key (with --ca)")


def _lab_ca(args: argparse.Namespace):
    """The CA given with --ca/--ca-key, else this installation's own (made on first use, with Ferry's own peer
    certificate from it, so that this machine can seed what it creates)."""
    from app.paths import data_dir
    from backends.torrent.tls import Identity, creator_ca

    if bool(args.ca) != bool(args.ca_key):
        raise BadRequest("Give both --ca and --ca-key (the lab CA's certificate and its key).")
    if args.ca:
        return Identity(Path(args.ca).expanduser(), Path(args.ca_key).expanduser())
    return creator_ca(data_dir() / "tls")


def run_cert(args: argparse.Namespace) -> int:
    from backends.torrent.tls import issue

    if not 1 <= args.days <= 3650:
        raise BadRequest("--days takes a number from 1 to 3650.")
    out = Path(args.output).expanduser()
    if not out.parent.is_dir():
        raise LocalError(f"The folder {out.parent} does not exist. Create it first.")
    made = issue(_lab_ca(args), out.with_name(out.name + ".pem"), out.with_name(out.name + ".key"),
                 names=(args.torrent_name,), days=args.days)
    print(f"Wrote {made.cert} and {made.key} (valid {args.days} days, for "
          f"{'every torrent of the lab' if args.torrent_name == '*' else args.torrent_name}). Give both to the peer: "
          "labferry copy X.torrent DEST --tls-cert … --tls-key … (keep the key private).")
    return 0


def run_create(args: argparse.Namespace) -> int:
    from backends.torrent.create import create

    path = Path(args.path).expanduser()
    out = Path(args.output or f"{path.resolve().name}.torrent").expanduser()
    if not out.parent.is_dir():
        raise LocalError(f"The folder {out.parent} does not exist. Create it first.")
    began = time.monotonic()
    line, shown = ProgressLine(), [0.0]

    def progress(done: int, total: int) -> None:
        if time.monotonic() - shown[0] > 0.2:
            shown[0] = time.monotonic()
            line.show(f"hashing {100 * done / total:5.1f}%  ({done}/{total} pieces)")

    root = None
    if args.tls:
        from backends.torrent.tls import root_pem

        root = root_pem(_lab_ca(args))
    elif args.ca or args.ca_key:
        raise BadRequest("--ca and --ca-key make a TLS torrent: add --tls.")
    data = create(path, web_seeds=tuple(args.web_seed or ()), private=args.private, v2_only=not args.hybrid,
                  trackers=tuple(args.tracker or ()), progress=progress, root_cert=root)
    line.done()
    out.write_bytes(data)
    import libtorrent as lt

    from backends.torrent.browse import data_files

    info = lt.torrent_info(str(out))
    real = data_files(info)  # v2 pads every file to a piece boundary: the pads are not data
    print(f"Wrote {out} ({len(real)} file(s), {format_bytes(sum(f.size for f in real))}, {info.num_pieces()} "
          f"pieces, {'private' if args.private else 'public'}, {'v1+v2 hybrid' if args.hybrid else 'v2'}"
          f"{', TLS: peers need a certificate from the lab CA' if root else ''}) in "
          f"{time.monotonic() - began:.1f} s.")
    if args.private:
        # libtorrent never hands a private torrent's metadata to a peer that asks for it (ut_metadata is off
        # for private torrents), so its magnet link could never fetch anything: the file is what to share
        print(f"Share {out.name} itself: a private torrent cannot be fetched from a magnet link.")
    else:
        print(lt.make_magnet_uri(info))
    return 0


def run_seed(args: argparse.Namespace) -> int:
    from app.engine import Engine, JobState
    from app.engine.events import NOTE

    if not 1 <= args.connections <= 64:
        raise BadRequest("--connections takes a number from 1 to 64.")
    from app.requests import Overrides, resolve_here

    chosen = Overrides(streams=args.connections, backend_options={
        "seed": True, "listen": args.listen, "connections": args.connections, "encryption": args.encryption,
        "discovery": args.discovery or None, "tls_cert": args.tls_cert, "tls_key": args.tls_key,
        "upload_limit": parse_rate(args.upload_limit) if args.upload_limit else None})
    request = resolve_here(args.torrent, args.data, chosen, advice=False)
    engine = Engine(run_queue=False, max_jobs=1).start()
    events, unsubscribe = engine.bus.queue()
    view, line = None, ProgressLine()
    try:
        view = request.submit_to(engine)
        size = None
        while not (view.state.terminal or view.state == JobState.PAUSED):
            try:
                event = events.get(timeout=1.0)
            except Exception:
                event = None
            if event is not None and event.job.id == view.id:
                view = event.job
                if event.kind == NOTE and event.message:
                    line.say(f"labferry: note: {event.message}")
            size = size or _size(args.torrent)
            ratio = view.bytes_done / size if size else 0
            line.show(f"served {format_bytes(view.bytes_done)}  {format_rate(view.rate)}  peers {view.streams}  "
                      f"ratio {ratio:.2f}")
        line.done()
        print(f"labferry: {view.error or 'seeding stopped.'}", file=sys.stderr)
        return 1 if view.state == JobState.FAILED else 0
    except KeyboardInterrupt:
        if view is not None:
            engine.cancel(view.id)
        line.done()
        print("labferry: stopped seeding.", file=sys.stderr)
        return 0
    finally:
        unsubscribe()
        engine.close()


def _size(path: str) -> int | None:
    import libtorrent as lt

    try:
        return lt.torrent_info(str(Path(path).expanduser())).total_size()
    except RuntimeError:
        return None
