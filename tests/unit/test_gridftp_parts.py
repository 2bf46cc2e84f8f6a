"""GridFTP pieces without a server: addresses, argv, -vb parsing, error wording, stream and buffer choice."""

from __future__ import annotations

import pytest

from backends.core.base import TransferOptions
from backends.core.errors import BadRequest, LocalError, NotFound, PermissionDenied, Transient, Unreachable
from backends.gridftp import faults, guc
from backends.gridftp.address import GridUrl, local_url
from backends.gridftp.tuning import choose_buffer, choose_streams, plan


def test_grid_urls_parse_and_render():
    url = GridUrl.parse("gsiftp://dtn.example.org/data/run%201/reads.fq")
    assert (url.host, url.port, url.path, url.name) == ("dtn.example.org", 2811, "/data/run 1/reads.fq", "reads.fq")
    assert url.text() == "gsiftp://dtn.example.org:2811/data/run%201/reads.fq"
    assert GridUrl.parse("ftp://h/a/b/").text(folder=True) == "ftp://h:21/a/b/"
    assert GridUrl.parse("sshftp://me@h/x").text() == "sshftp://me@h:22/x"
    assert local_url("/tmp/a b/c", folder=True) == "file:///tmp/a%20b/c/"
    for bad in ("ftp:///x", "ftp://h:99999/x", "ftp://u:pw@h/x", "ftp://h/x?y=1", "https://h/x", "ftp://h/a%0Ab"):
        with pytest.raises(BadRequest):
            GridUrl.parse(bad)


def test_argv_is_a_list_with_the_options_asked_for():
    opts = guc.Options(streams=8, tcp_bs=4 << 20, recursive=True, concurrency=4, sync_level=2)
    args = guc.argv(opts, "ftp://h:21/a/", "file:///b/", tool="globus-url-copy")
    assert args[:5] == ["globus-url-copy", "-vb", "-cd", "-p", "8"]
    assert args[-3:] == ["--", "ftp://h:21/a/", "file:///b/"]
    joined = " ".join(args)
    for piece in ("-tcp-bs 4194304", "-r -fast -cc 4", "-sync -sync-level 2", "-rst -rst-retries 3"):
        assert piece in joined
    probe = guc.argv(guc.Options(streams=2, seconds=3), "ftp://h:21/f", "file:///dev/null")
    assert "-t" in probe and "-rst" not in probe


def test_vb_output_becomes_progress_and_file_events():
    seen, files, sources = [], [], []
    parser = guc.Progress(seen.append, files.append, sources.append)
    stream = (b"Source: ftp://h:21/data/\nDest:   file:///x/\n  a.bin  ->  a.bin.part\n\n"
              b"     454819840 bytes       216.83 MB/sec avg       216.83 MB/sec inst\r"
              b"     975437824 bytes       232.56 MB/sec avg       248.29 MB/sec inst\r"
              b"    1514930")  # a line cut in the middle of a read
    for i in range(0, len(stream), 7):
        parser.feed(stream[i:i + 7])
    parser.feed(b"176 bytes       240.76 MB/sec avg       257.14 MB/sec inst\r\n")
    assert seen == [454819840, 975437824, 1514930176]
    assert files == ["a.bin"] and sources == ["ftp://h:21/data/"]


@pytest.mark.parametrize("stderr, kind, words", [
    ("error: globus_xio: Unable to connect to 127.0.0.1:5899\nglobus_xio: System error in connect: "
     "Connection refused\n", Unreachable, "127.0.0.1:5899 refused"),
    ("error: globus_xio: Unable to connect to nohost.invalid:21\nglobus_common: Name or service not known\n",
     Unreachable, "nohost.invalid:21 could not be found"),
    ("error: globus_ftp_client: the server responded with an error\n500 500-Command failed. : "
     "globus_l_gfs_file_open failed.\n500-globus_xio: Unable to open file /d/nope.bin\n500-globus_xio: System "
     "error in open: No such file or directory\n", NotFound, "no /d/nope.bin"),
    ("error: globus_ftp_client: the server responded with an error\n500-globus_xio: Unable to open file "
     "/ro/a.bin.part\n500-globus_xio: System error in open: Permission denied\n", PermissionDenied, "access to /ro "),
    ("error: globus_xio: Unable to open file /nonexist/x\nglobus_xio: System error in open: No such file or "
     "directory\n", LocalError, "local folder"),
    ("error: something new\n", Transient, "something new"),
])
def test_errors_become_sentences(stderr, kind, words):
    err = faults.explain(stderr, source="ftp://h/x", dest="/tmp/x")
    assert type(err) is kind and words in str(err)
    assert "\n" not in str(err) and str(err).endswith(".")


def test_streams_come_from_what_is_known():
    assert choose_streams(6, learned=32, rtt_s=0.1, size=None, maximum=64)[0] == 6
    assert choose_streams("auto", learned=12, rtt_s=0.1, size=None, maximum=64)[0] == 12
    assert choose_streams("auto", learned=None, rtt_s=0.05, size=1 << 30, maximum=64)[0] == 32
    assert choose_streams("auto", learned=None, rtt_s=0.1, size=1 << 30, maximum=64)[0] == 64
    assert choose_streams("auto", learned=None, rtt_s=0.1, size=20 << 20, maximum=64)[0] == 1
    assert choose_streams("auto", learned=None, rtt_s=0.0002, size=1 << 30, maximum=64)[0] == 2


def test_tcp_buffer_only_where_it_helps():
    autotune = (4 << 20, 32 << 20)
    assert choose_buffer(8, 0.05, kernel=autotune)[0] is None  # autotuning reaches the 8 MiB each stream needs
    old_kernel = (64 << 20, 4 << 20)  # autotuning capped at 4 MiB, programs may set 64 MiB
    size, why = choose_buffer(4, 0.1, kernel=old_kernel, bottleneck_bps=10e9)
    assert size == int(10e9 / 8 * 0.1 / 4 * 1.25) and "bandwidth-delay" in why
    assert choose_buffer(1, 0.1, kernel=(4 << 20, 4 << 20))[0] is None  # too big for rmem_max: not forced
    assert choose_buffer(4, None, kernel=autotune)[0] is None
    assert choose_buffer(4, 0.1, explicit=1 << 20, kernel=autotune)[0] == 1 << 20
    configured = TransferOptions(streams=3, backend_options={"tcp_bs": 2 << 20})
    assert plan(configured, rtt_s=0.01, size=None).tcp_bs == 2 << 20


def _request(source: str, transport: str = "auto", advice: dict | None = None):
    from backends.core.base import TransferRequest

    options = TransferOptions(backend_options={"transport": transport}, transport_advice=advice)
    return TransferRequest(source, "/tmp/x.bin", options)


def test_auto_takes_udt_only_where_a_preflight_measured_it_faster_on_gsiftp():
    from backends.gridftp.transport import choose

    faster = {"transport": "udt", "why": "the preflight of today measured UDT at 95 Mbit/s and TCP at 27"}
    assert choose(_request("gsiftp://h/x.bin")) == choose(_request("gsiftp://h/x.bin", advice={"transport": "tcp"}))
    assert not choose(_request("gsiftp://h/x.bin")).udt and choose(_request("gsiftp://h/x.bin")).why is None
    chosen = choose(_request("gsiftp://h/x.bin", advice=faster))
    assert chosen.udt and chosen.auto and "UDT at 95 Mbit/s" in chosen.why
    elsewhere = choose(_request("ftp://h/x.bin", advice=faster))
    assert not elsewhere.udt and "works only on gsiftp://" in elsewhere.why
    assert not choose(_request("gsiftp://h/x.bin", "tcp", faster)).udt
    explicit = choose(_request("gsiftp://h/x.bin", "udt"))
    assert explicit.udt and not explicit.auto


def test_a_udt_plan_is_one_flow_without_buffers():
    udt = TransferOptions(streams=8, backend_options={"transport": "udt", "tcp_bs": 2 << 20})
    made = plan(udt, rtt_s=0.1, size=1 << 30)
    assert (made.streams, made.tcp_bs) == (1, None) and "UDT, one flow" in made.why
    assert "-p" not in guc.argv(guc.Options(streams=8, udt=True), "gsiftp://h/x", "file:///x")


@pytest.mark.parametrize("stderr, reason", [
    ("error: globus_ftp_client: the server responded with an error\n500 500-Command failed. : udt driver not "
     "whitelisted\n", "the server does not allow it"),
    ("error: globus_xio: could not load udt driver: not found\n", "cannot load the UDT driver"),
])
def test_udt_that_cannot_start_is_its_own_error(stderr, reason):
    err = faults.explain(stderr, source="gsiftp://h/x", dest="/tmp/x")
    assert isinstance(err, faults.NoUdt) and reason in err.reason and "--transport tcp" in str(err)
