"""The preflight wizard in the real window: pick a site, watch the sweep, apply, copy for IT."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from app.sites import Site, SiteBook
from app.store import Store


def test_wizard_measures_a_site_live_applies_the_advice_and_copies_sysctl(qtbot, window, sshd):
    with Store() as store:
        SiteBook(store).save(Site("lab", "sftp", "127.0.0.1", sshd.port, sshd.user, "", "auto", str(sshd.key),
                                  {"known_hosts": str(sshd.known_hosts)}))
    window.refresh_sites()
    window.actions_by_name["preflight"].trigger()
    wizard = window.preflight_wizard  # a child of the window: closed and deleted with it
    wizard.pick.site.setCurrentText("lab")
    wizard.pick.quick.setChecked(True)
    assert wizard.pick.isComplete()
    seen_points, clock = [], []
    wizard.measure.progressed.connect(lambda p: seen_points.append(p.point) if p.point else None)
    wizard.measure.clock.valueChanged.connect(lambda _: clock.append(wizard.measure.clock.format()))
    wizard.next()
    qtbot.waitUntil(lambda: wizard.measure.result is not None or wizard.measure.error is not None, timeout=90_000)
    assert wizard.measure.error is None, wizard.measure.error
    result = wizard.measure.result
    assert seen_points and len(wizard.measure.plot.points) == len(result["sweep"])  # drawn as they came
    # the wait is announced once the round trip is known, and counted down while it lasts
    assert any(c.startswith("about ") and c.endswith(" s left") for c in clock), clock
    assert wizard.measure.clock.format() == "done"
    assert wizard.measure.isComplete()
    wizard.next()
    advice = wizard.advice
    # one plain sentence first; the figures and the sysctl lines folded away until IT opens them
    said = advice.verdict.text()
    assert said.startswith(("This path is fine", "This path loses packets")), said
    assert f"Ferry will use {result['recommended_streams']} stream" in said, said
    assert "sysctl" not in said and "Bandwidth-delay" not in said, said
    assert not advice.summary.isVisible() and not advice.sysctl.isVisible()
    advice.more.click()
    assert advice.summary.isVisible() and advice.sysctl.isVisible()
    assert f"{result['recommended_streams']} stream" in advice.summary.text()
    assert "0.0 MB" not in advice.summary.text(), advice.summary.text()
    assert advice.apply.isEnabled()
    advice.apply.click()
    with Store() as store:
        assert SiteBook(store).get("lab").streams == str(result["recommended_streams"])
    advice.copy.click()
    assert QApplication.clipboard().text() == advice.sysctl.toPlainText()
    assert advice.sysctl.toPlainText().startswith("#")
    with Store() as store:
        assert store.preflights.latest("127.0.0.1", "ssh")["recommended_streams"] == result["recommended_streams"]
    wizard.close()


def test_wizard_says_why_when_the_address_cannot_be_measured(qtbot, window):
    from tests.servers.nginx import free_port

    window.actions_by_name["preflight"].trigger()
    wizard = window.preflight_wizard  # a child of the window: closed and deleted with it
    wizard.pick.site.setCurrentText("Another address…")
    assert not wizard.pick.isComplete()
    wizard.pick.url.setText(f"https://127.0.0.1:{free_port()}/big.bin")
    assert wizard.pick.isComplete()
    wizard.next()
    qtbot.waitUntil(lambda: wizard.measure.error is not None, timeout=30_000)
    assert "could not connect" in wizard.measure.error and not wizard.measure.isComplete()
    assert "Could not measure" in wizard.measure.status.text()
    wizard.close()
