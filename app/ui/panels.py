"""Side panels: the sites sidebar (a drop target), the benchmark plots, the tray icon, the theme."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QAction, QColor, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMenu,
    QSystemTrayIcon,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from app.sites import Site

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
SiteRole = 0x0100 + 5


def app_icon() -> QIcon:
    return QIcon(str(RESOURCES / "ferry.svg"))


#: what an empty queue says to someone who has not used Ferry before
EMPTY_QUEUE = ("Nothing queued yet.\n\nDrop files, links, .torrent files or accessions here, or press New transfer "
               "(Ctrl+N).\nPublic data… fetches a study by accession (PRJEB…, SRR…, GSE…); Add site saves a "
               "collaborator's server so you can send to it and browse it.")


def empty_hint(view, text: str = EMPTY_QUEUE) -> QLabel:
    """A quiet sentence in the middle of ``view`` while its model has no rows."""
    label = QLabel(text, view.viewport())
    label.setObjectName("emptyHint")
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setWordWrap(True)
    label.setStyleSheet("color: gray;")
    label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
    QVBoxLayout(view.viewport()).addWidget(label)
    model = view.model()

    def update(*_) -> None:
        label.setVisible(model.rowCount() == 0)

    for signal in (model.rowsInserted, model.rowsRemoved, model.modelReset, model.layoutChanged):
        signal.connect(update)
    update()
    return label


def local_paths(urls: list[QUrl]) -> list[str]:
    return [u.toLocalFile() for u in urls if u.isLocalFile()]


class Sidebar(QTreeWidget):
    """Sites and local places; dropping files on a site uploads them to its default folder."""

    files_dropped_on_site = Signal(str, list)  # site name, local paths
    site_activated = Signal(str)  # edit it ("" for a new one)
    site_removed = Signal(str)  # the user asked to remove it (the window asks first)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setHeaderHidden(True)
        self.setAcceptDrops(True)
        self.setDropIndicatorShown(True)
        self.sites_item = QTreeWidgetItem(self, ["Sites"])
        self.places_item = QTreeWidgetItem(self, ["Places"])
        for label, path in (("Home", Path.home()), ("Downloads", Path.home() / "Downloads")):
            item = QTreeWidgetItem(self.places_item, [label])
            item.setToolTip(0, str(path))
        self.expandAll()
        self.itemDoubleClicked.connect(self._activated)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self.last_menu: QMenu | None = None

    def _menu(self, pos) -> None:
        """Right-click: a site's Edit and Remove, or Add site on the rest (as FileZilla's Site Manager has)."""
        name = self.site_at(pos)
        menu = QMenu(self)
        if name:
            menu.addAction("Edit site…", lambda: self.site_activated.emit(name))
            menu.addAction("Remove site…", lambda: self.site_removed.emit(name))
        else:
            menu.addAction("Add site…", lambda: self.site_activated.emit(""))
        self.last_menu = menu  # kept while it is open (and for the tests)
        menu.popup(self.viewport().mapToGlobal(pos))

    def set_sites(self, sites: list[Site], agents: dict[str, str] | None = None) -> None:
        """``agents``: site name → the Ferry version its host's agent answered with (found by trying)."""
        self.sites_item.takeChildren()
        for site in sites:
            version = (agents or {}).get(site.name)
            item = QTreeWidgetItem(self.sites_item, [f"{site.name} · agent" if version else site.name])
            item.setToolTip(0, site.url() + (f"\nRuns Ferry's agent ({version})" if version else ""))
            item.setData(0, SiteRole, site.name)
        self.sites_item.setExpanded(True)

    def site_at(self, pos) -> str | None:
        item = self.itemAt(pos)
        return item.data(0, SiteRole) if item is not None else None

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dragMoveEvent(self, event) -> None:
        if event.mimeData().hasUrls() and self.site_at(event.position().toPoint()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event) -> None:
        name = self.site_at(event.position().toPoint())
        paths = local_paths(event.mimeData().urls())
        if name and paths:
            self.files_dropped_on_site.emit(name, paths)
            event.acceptProposedAction()

    def _activated(self, item: QTreeWidgetItem) -> None:
        name = item.data(0, SiteRole)
        if name:
            self.site_activated.emit(name)


class Tray(QSystemTrayIcon):
    """Overall progress in the tooltip, a menu, and notifications."""

    def __init__(self, window, parent=None) -> None:
        super().__init__(app_icon(), parent)
        menu = QMenu()
        show = QAction("Show Ferry", menu)
        show.triggered.connect(window.show_normal)
        quit_action = QAction("Quit", menu)
        quit_action.triggered.connect(window.quit_asking)
        menu.addAction(show)
        menu.addAction(quit_action)
        self.setContextMenu(menu)
        self._menu = menu
        self.activated.connect(lambda reason: window.show_normal())
        self.setToolTip("Ferry")

    @staticmethod
    def available() -> bool:
        return QSystemTrayIcon.isSystemTrayAvailable()


def apply_theme(choice: str) -> None:
    """Follow the system's light or dark scheme, or force one."""
    app = QApplication.instance()
    if choice == "system":
        hints = QGuiApplication.styleHints()
        scheme = hints.colorScheme() if hasattr(hints, "colorScheme") else None
        dark = scheme is not None and scheme.name == "Dark"
    else:
        dark = choice == "dark"
    app.setStyle("Fusion")
    if not dark:
        app.setPalette(app.style().standardPalette())
        return
    palette = QPalette()
    for role, color in ((QPalette.ColorRole.Window, "#202124"), (QPalette.ColorRole.WindowText, "#e8eaed"),
                        (QPalette.ColorRole.Base, "#17181a"), (QPalette.ColorRole.AlternateBase, "#26282b"),
                        (QPalette.ColorRole.Text, "#e8eaed"), (QPalette.ColorRole.Button, "#2d2f33"),
                        (QPalette.ColorRole.ButtonText, "#e8eaed"), (QPalette.ColorRole.Highlight, "#1f6feb"),
                        (QPalette.ColorRole.HighlightedText, "#ffffff"), (QPalette.ColorRole.ToolTipBase, "#2d2f33"),
                        (QPalette.ColorRole.ToolTipText, "#e8eaed")):
        palette.setColor(role, QColor(color))
    app.setPalette(palette)
