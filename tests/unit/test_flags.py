"""CLI flags come from the backends' option declarations: written once, parsed into the front door's dict."""

from __future__ import annotations

from dataclasses import fields

from app.cli import build_parser
from app.cli.copy import backend_options
from backends.ssh.options import SshOptions
from backends.torrent.options import TorrentOptions


def test_every_declared_flag_is_on_copy_and_lands_in_the_backend_options():
    args = build_parser().parse_args([
        "copy", "x.torrent", "/tmp/", "--peer", "a:1", "--peer", "b:2", "--upload-limit", "16M", "--encryption",
        "preferred", "--stall-timeout", "7.5", "--connections", "3", "--accept-new-host-key", "--max-handshakes",
        "4", "--identity", "/k"])
    assert backend_options(args) == {
        "peers": ["a:1", "b:2"], "upload_limit": 16 * 1024 * 1024, "encryption": "preferred", "stall_seconds": 7.5,
        "connections": 3, "accept_new_host_key": True, "max_handshakes": 4, "identity": "/k"}
    help_text = build_parser().parse_args(["copy", "a", "b"]) and _help()
    for spec in (SshOptions, TorrentOptions):
        for f in fields(spec):
            if f.metadata.get("flag"):
                assert f.metadata["flag"] in help_text, f.name


def test_flags_not_given_are_not_options():
    args = build_parser().parse_args(["copy", "https://h/x", "/tmp/"])
    assert backend_options(args) == {}


def _help() -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["copy"].format_help()
