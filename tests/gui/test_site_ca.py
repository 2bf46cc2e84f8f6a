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
