"""What each backend may offer, as named Protocols (backends/base.py), checked with isinstance."""

from __future__ import annotations

from backends.core.abilities import (
    BufferAdvisor,
    FolderEditor,
    Lister,
    ListFetcher,
    PathProber,
    RouteClaimer,
    Seeder,
    Sweeper,
)
from backends.core.base import Backend, ForwardsArriving
from backends.ftp import FtpBackend
from backends.gridftp import GridftpBackend
from backends.https import HttpsBackend
from backends.ssh import SshBackend
from backends.torrent import TorrentBackend


def test_each_backend_offers_exactly_the_abilities_it_implements():
    offers = {
        "https": {Lister, PathProber, Sweeper, ListFetcher},  # a web folder is read-only: no FolderEditor
        "ssh": {Lister, FolderEditor, PathProber, Sweeper, ForwardsArriving},
        "gridftp": {Lister, FolderEditor, PathProber, BufferAdvisor},
        "ftp": {Lister, FolderEditor, ListFetcher},
        "torrent": {RouteClaimer, Seeder},
        "relay": set(),  # the application's relay: the plain interface only
    }
    abilities = (Lister, FolderEditor, PathProber, Sweeper, BufferAdvisor, RouteClaimer, Seeder, ListFetcher,
                 ForwardsArriving)
    from app.relay import RelayBackend

    for backend in (HttpsBackend(), SshBackend(), GridftpBackend(), FtpBackend(), TorrentBackend(), RelayBackend()):
        assert isinstance(backend, Backend)
        assert {a for a in abilities if isinstance(backend, a)} == offers[backend.name], backend.name


def test_a_backend_without_a_probe_is_refused_by_the_preflight_in_words():
    import asyncio

    import pytest

    from app.preflight.measure import measure
    from backends.core.base import TransferOptions
    from backends.core.errors import TransferError

    with pytest.raises(TransferError, match="torrent transfers cannot be measured"):
        asyncio.run(measure(TorrentBackend(), "magnet:?xt=urn:btih:" + "0" * 40, TransferOptions()))
