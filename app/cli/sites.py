"""``labferry sites add|list|show|remove``: collaborator sites for ``site:NAME/path``."""

from __future__ import annotations

import argparse
import getpass
import json
import sys

from app.sites import PROTOCOLS, Site, SiteBook


def add_parser(sub) -> None:
    p = sub.add_parser("sites", help="saved collaborator sites (use them as site:NAME/path)")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    add = verbs.add_parser("add", help="add or update a site")
    add.add_argument("name")
    add.add_argument("--protocol", choices=PROTOCOLS, default="sftp")
    add.add_argument("--host", required=True)
    add.add_argument("--port", type=int)
    add.add_argument("--user")
    add.add_argument("--folder", default="", help="default remote folder")
    add.add_argument("--streams", default="auto", help="preferred streams: N or auto")
    add.add_argument("--key", help="SSH private key file")
    add.add_argument("--known-hosts", help="known_hosts file for this site")
    add.add_argument("--ca-file", help="lab CA for https sites")
    add.add_argument("--ask-secret", action="store_true",
                     help="ask for a password or key passphrase now and keep it in the OS keyring")
    add.set_defaults(handler=run_add)
    verbs.add_parser("list", help="list sites").set_defaults(handler=run_list)
    show = verbs.add_parser("show", help="show one site")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=run_show)
    rm = verbs.add_parser("remove", help="remove a site and its secret")
    rm.add_argument("name")
    rm.set_defaults(handler=run_remove)


def run_add(args: argparse.Namespace) -> int:
    from app.store import Store

    options = {"known_hosts": args.known_hosts, "ca_file": args.ca_file}
    site = Site(args.name, args.protocol, args.host, args.port, args.user, args.folder, str(args.streams), args.key,
                {k: v for k, v in options.items() if v})
    secret = None
    if args.ask_secret:
        try:
            secret = getpass.getpass(f"Password or key passphrase for {args.name} (kept in the OS keyring): ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            print(f"labferry: No password given; site {args.name} was not saved.", file=sys.stderr)
            return 2
    with Store() as store:
        SiteBook(store).save(site, secret)
    print(f"Saved site {site.name}: {site.url()}" + (" (secret in the keyring)" if secret else ""))
    return 0


def run_list(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store() as store:
        sites = SiteBook(store).all()
    if not sites:
        print("No sites yet. Add one: labferry sites add NAME --host HOST --user USER")
    for site in sites:
        print(f"{site.name:<16} {site.url()}  streams {site.streams}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store() as store:
        site = SiteBook(store).get(args.name)
    if args.json:
        print(json.dumps(site.to_row() | {"url": site.url()}))
    else:
        for key, value in site.to_row().items():
            print(f"{key:>14}: {value}")
        print(f"{'url':>14}: {site.url()}")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store() as store:
        SiteBook(store).remove(args.name)
    print(f"Removed site {args.name}.", file=sys.stderr)
    return 0
