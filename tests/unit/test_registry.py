"""Which backends a lookup loads: an address's own, or the one named, alone (each is ~5 ms of imports; all of
them put ~25 ms before a study's first GET)."""

from __future__ import annotations

import pytest

from backends.core.errors import BadRequest
from backends.core.registry import Registry


def test_an_address_and_then_its_backend_by_name_load_that_backend_alone():
    registry = Registry()
    assert registry.for_route("https://files.example.org/run_1.fastq.gz", "/tmp/dest").name == "https"
    assert registry.get("https").name == "https"
    assert [b.name for b in registry.loaded()] == ["https"]


def test_a_backend_by_name_first_loads_it_alone():
    registry = Registry()
    assert registry.get("ftp").name == "ftp"
    assert [b.name for b in registry.loaded()] == ["ftp"]


def test_an_unknown_name_is_one_sentence_naming_every_backend():
    registry = Registry()
    with pytest.raises(BadRequest) as refused:
        registry.get("gopher")
    assert str(refused.value).startswith("There is no backend called 'gopher'. Known: ")
    assert {"https", "ftp", "ssh"} <= {b.name for b in registry.loaded()}
