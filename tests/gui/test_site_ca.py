"""A site saved with a lab CA: an HTTPS download started from the window trusts it (real nginx, own CA).

Before the front door (``app.requests``), the CLI passed the site's CA to the HTTPS backend while the window
left it among the backend options, where the HTTPS backend never looks: the same site failed from the window
with an untrusted-certificate error.
"""

from __future__ import annotations

from app.engine import JobState
from app.sites import Site, SiteBook
from app.store import Store
from tests.integration.conftest import sha256_of


def test_a_sites_lab_ca_reaches_an_https_download_started_from_the_window(qtbot, window, nginx, plain_file,
                                                                          tmp_path):
    with Store(window.db_path) as store:
        SiteBook(store).save(Site("core", "https", "127.0.0.1", port=nginx.port, options={"ca_file": nginx.ca_file}))
    window.submit("site:core/plain.bin", str(tmp_path))
    qtbot.waitUntil(lambda: any(v.source.endswith("plain.bin") for v in window.queue_model.views()), timeout=10_000)
    view = next(v for v in window.queue_model.views() if v.source.endswith("plain.bin"))

    def current():
        return next(v for v in window.queue_model.views() if v.id == view.id)

    qtbot.waitUntil(lambda: current().state in (JobState.DONE, JobState.FAILED), timeout=60_000)
    done = current()
    assert done.state == JobState.DONE, done.error
    assert sha256_of(tmp_path / "plain.bin") == plain_file.sha256


def test_the_site_dialog_shows_each_protocols_declared_options_and_checks_them(qtbot):
    """The dialog's protocol rows come from the backends' declarations: a new option appears with no change to
    the window, and a value of the wrong type is refused with the front door's sentence before it is saved."""
    from dataclasses import fields

    import pytest

    from app.ui.dialogs import SiteDialog
    from backends.core.errors import TransferError
    from backends.ftp.options import FtpOptions
    from backends.ssh.options import SshOptions

    dialog = SiteDialog()
    qtbot.addWidget(dialog)
    dialog.name.setText("lab")
    dialog.host.setText("dtn.example.org")
    dialog.protocol.setCurrentText("sftp")
    assert set(dialog.options.widgets) == {f.name for f in fields(SshOptions)} - {"identity"}
    dialog.protocol.setCurrentText("ftps")
    assert set(dialog.options.widgets) == {"ca_file"} | {f.name for f in fields(FtpOptions)}
    dialog.options.widgets["max_handshakes"].setText("many")
    with pytest.raises(TransferError, match="whole number"):
        dialog.site()
    dialog.options.widgets["max_handshakes"].setText("4")
    assert dialog.site().options == {"max_handshakes": 4}


def test_a_lab_ca_typed_into_the_site_dialog_reaches_a_download_from_the_window(qtbot, window, nginx, plain_file,
                                                                                tmp_path):
    from app.ui.dialogs import SiteDialog

    dialog = SiteDialog(window)
    qtbot.addWidget(dialog)
    dialog.name.setText("core2")
    dialog.protocol.setCurrentText("https")
    dialog.host.setText("127.0.0.1")
    dialog.port.setValue(nginx.port)
    dialog.options.widgets["ca_file"].setText(nginx.ca_file)
    with Store(window.db_path) as store:
        SiteBook(store).save(dialog.site())
    window.submit("site:core2/plain.bin", str(tmp_path))
    qtbot.waitUntil(lambda: any(v.source.endswith("plain.bin") for v in window.queue_model.views()), timeout=10_000)
    view = next(v for v in window.queue_model.views() if v.source.endswith("plain.bin"))
    qtbot.waitUntil(lambda: next(v for v in window.queue_model.views() if v.id == view.id).state
                    in (JobState.DONE, JobState.FAILED), timeout=60_000)
    done = next(v for v in window.queue_model.views() if v.id == view.id)
    assert done.state == JobState.DONE, done.error
    assert sha256_of(tmp_path / "plain.bin") == plain_file.sha256
