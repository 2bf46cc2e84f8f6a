"""The window's sites: listed from the store, their keyring secrets, added or edited in the site dialog, tested
on the engine's thread, browsed to pick a file or folder, and sent files dropped on them. A mixin of
``main_window.MainWindow``, which holds the bridge, the database's path and the sidebar."""

from __future__ import annotations

from PySide6.QtWidgets import QInputDialog

from app.requests import site_options
from app.sites import Site, SiteBook
from app.store import Store

from .agents_tab import agent_note
from .browser import RemoteBrowser
from .dialogs import SiteDialog


class SiteActions:
    """What the window does with its sites (see the module's docstring)."""

    def browse_site(self, parent, folder: bool = False) -> str | None:
        """Pick a file or folder on a site (``folder``: the folder an upload goes into); ``site:NAME/path``."""
        sites = self._sites()
        if not sites:
            self._show_error("There is no site to browse yet; add one first (Add site).")
            return None
        name, ok = QInputDialog.getItem(parent, "Browse a site", "Site:", [s.name for s in sites], 0, False)
        if not ok:
            return None
        site = next(s for s in sites if s.name == name)
        browser = RemoteBrowser(self.bridge, site, self.secret_of(site), parent, folder=folder)
        return browser.chosen if browser.exec() else None

    def upload_to_site(self, name: str, paths: list[str]) -> None:
        for path in paths:
            self.submit(path, f"site:{name}/")

    def _sites(self) -> list[Site]:
        with Store(self.db_path) as store:
            return SiteBook(store).all()

    def secret_of(self, site: Site) -> str | None:
        with Store(self.db_path) as store:
            return SiteBook(store).secrets.get(site.name)

    def refresh_sites(self) -> None:
        sites = self._sites()
        with Store(self.db_path) as store:
            agents = {s.name: (agent_note(store, s.name) or {}).get("version") for s in sites}
        self.sidebar.set_sites(sites, agents)
        self.files.refresh_sites()
        self.agents.refresh_sites()

    def edit_site(self, name: str | None) -> None:
        site = None
        if name:
            with Store(self.db_path) as store:
                site = SiteBook(store).get(name)
        dialog = SiteDialog(self, site, test=self._test_site)
        if dialog.exec():
            with Store(self.db_path) as store:
                SiteBook(store).save(dialog.site(), dialog.secret_to_keep())
            self.refresh_sites()

    def _test_site(self, site: Site, secret: str | None, report) -> None:
        """Connect to the site on the engine's thread; ``report`` shows the outcome in the dialog."""
        options = site_options(site)

        def answered(info) -> None:
            report(f"Connected: {site.url()} is a {'folder' if info.is_dir else 'file'}.", True)

        self.bridge.call("stat", site.url("", secret), options, done=answered, error=lambda msg: report(msg, False))
        report("Connecting…", True)
