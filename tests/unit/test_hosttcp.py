"""Host TCP settings and the sysctl advice for a path (read from a fake /proc/sys tree)."""

from __future__ import annotations

from backends.host.hosttcp import advise, read_host_tcp


def fake_proc(tmp_path, **values):
    defaults = {"net/core/rmem_max": "212992", "net/core/wmem_max": "212992",
                "net/ipv4/tcp_rmem": "4096\t131072\t6291456", "net/ipv4/tcp_wmem": "4096\t16384\t4194304",
                "net/ipv4/tcp_congestion_control": "cubic",
                "net/ipv4/tcp_available_congestion_control": "reno cubic bbr",
                "net/core/default_qdisc": "fq_codel", "net/ipv4/tcp_mtu_probing": "0"}
    defaults.update(values)
    for rel, text in defaults.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text + "\n")
    return read_host_tcp(tmp_path)


def test_reads_the_settings(tmp_path):
    tcp = fake_proc(tmp_path)
    assert tcp.available and tcp.congestion == "cubic" and tcp.rmem_max == 212992
    assert tcp.autotune_max == 6291456 and tcp.send_max == 4194304
    assert round(tcp.max_rate_mbps(100)) == round(4194304 * 8 / 0.1 / 1e6)


def test_a_long_fat_lossy_path_gets_every_line_with_a_reason(tmp_path):
    needs = advise(fake_proc(tmp_path), rtt_ms=100, rate_mbps=10_000, lossy=True)
    assert needs.bdp_bytes == 125_000_000
    lines = {a.line.split(" = ")[0]: a for a in needs.advice}
    assert set(lines) == {"net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
                          "net.ipv4.tcp_congestion_control", "net.core.default_qdisc", "net.ipv4.tcp_mtu_probing"}
    assert int(lines["net.core.rmem_max"].line.split(" = ")[1]) >= 2 * needs.bdp_bytes
    assert lines["net.ipv4.tcp_rmem"].line.startswith("net.ipv4.tcp_rmem = 4096 131072 ")
    assert all(a.reason for a in needs.advice)


def test_a_tuned_host_needs_nothing(tmp_path):
    big = str(256 * 1024 * 1024)
    tcp = fake_proc(tmp_path, **{"net/core/rmem_max": big, "net/core/wmem_max": big,
                                 "net/ipv4/tcp_rmem": f"4096 131072 {big}", "net/ipv4/tcp_wmem": f"4096 16384 {big}",
                                 "net/ipv4/tcp_congestion_control": "bbr", "net/core/default_qdisc": "fq",
                                 "net/ipv4/tcp_mtu_probing": "1"})
    assert advise(tcp, rtt_ms=100, rate_mbps=10_000, lossy=True).advice == []


def test_without_proc_it_says_so(tmp_path):
    tcp = read_host_tcp(tmp_path / "missing")
    assert not tcp.available and tcp.reason
    assert advise(tcp, 50, 1000).advice == []
