"""The relay preflight's verdict: a pipeline moves at its slower hop, each hop within the relay's streams, and
the relay is recommended only when it beats the direct path by the margin its extra hop is worth."""

from __future__ import annotations

from app.preflight.relay import GAIN, best_rate, verdict


def _analysis(host: str, sweep: dict[int, float], rtt_ms: float = 10.0) -> dict:
    return {"host": host, "rtt_ms": rtt_ms, "sweep": {str(n): v for n, v in sweep.items()}}


def test_the_best_rate_counts_only_streams_a_relay_hop_may_open():
    analysis = _analysis("dtn", {4: 200.0, 16: 500.0, 64: 900.0})
    assert best_rate(analysis) == (900.0, 64)
    assert best_rate(analysis, 16) == (500.0, 16)
    assert best_rate(_analysis("x", {32: 1.0}), 16) == (0.0, 0)


def test_a_lossy_last_mile_and_a_clean_backbone_recommend_the_relay():
    direct = _analysis("collab", {16: 120.0, 64: 350.0}, 110)
    first = _analysis("dtn", {8: 400.0, 16: 600.0}, 10)
    second = _analysis("collab", {8: 850.0, 16: 900.0}, 100)
    result = verdict(direct, first, second, "site:dtn", 16)
    assert result["recommend_relay"] and result["relay_mbps"] == 600.0 and result["ratio"] == round(600 / 350, 2)
    assert result["why"].startswith("Send it via site:dtn") and "the last mile sets the pace" in result["why"]


def test_a_relay_that_gains_too_little_is_not_recommended():
    direct = _analysis("collab", {16: 500.0})
    hop = _analysis("dtn", {16: 500.0 * (GAIN - 0.1)})
    result = verdict(direct, hop, hop, "site:dtn", 16)
    assert not result["recommend_relay"] and result["why"].startswith("Copy directly")
    assert "gain only" in result["why"]
    slower = verdict(direct, _analysis("dtn", {16: 100.0}), hop, "site:dtn", 16)
    assert not slower["recommend_relay"] and "would gain" not in slower["why"]
