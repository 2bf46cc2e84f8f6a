"""What the window remembers between starts, as FileZilla and Cyberduck do: its size and place, where its
splitters stand, History's filters, and the last folder a transfer went to (New transfer's *To* starts there).

Kept in the store's settings (``window`` and ``last_folder``), user-only like the rest of Ferry's data. A value
that no longer fits (a splitter that was renamed, a filter choice that is gone) is passed over."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QComboBox, QSplitter

from app.store import Store

#: History's filters, by the attribute that holds each combo box
FILTERS = ("outcome", "backend_filter", "site_filter", "period")
#: the most splitters and sizes read back (the setting is ours, but a damaged one stays bounded)
MOST = 16


def remember(window) -> None:
    """Save the window's size, place, splitters and History's filters (at quit)."""
    state = {
        "size": [window.width(), window.height()],
        "place": [window.x(), window.y()],
        "maximized": window.isMaximized(),
        "splitters": {s.objectName(): s.sizes() for s in window.findChildren(QSplitter) if s.objectName()},
        "history": {name: getattr(window, name).currentText() for name in FILTERS
                    if isinstance(getattr(window, name, None), QComboBox)},
        "tab": window.tabs.currentIndex(),
    }
    with Store(window.db_path) as store:
        store.settings.set("window", state)


def restore(window) -> None:
    """Put back what ``remember`` saved; nothing when nothing was saved."""
    state = window.settings.get("window")
    if not isinstance(state, dict):
        return
    _place(window, state)
    sizes = state.get("splitters") if isinstance(state.get("splitters"), dict) else {}
    for splitter in window.findChildren(QSplitter):
        saved = sizes.get(splitter.objectName())
        if isinstance(saved, list) and len(saved) == splitter.count() and len(saved) <= MOST \
                and all(isinstance(n, int) and n >= 0 for n in saved):
            splitter.setSizes(saved)
    history = state.get("history") if isinstance(state.get("history"), dict) else {}
    for name in FILTERS:
        combo = getattr(window, name, None)
        if isinstance(combo, QComboBox) and isinstance(history.get(name), str):
            found = combo.findText(history[name])
            if found >= 0:
                combo.setCurrentIndex(found)
    if isinstance(state.get("tab"), int) and 0 <= state["tab"] < window.tabs.count():
        window.tabs.setCurrentIndex(state["tab"])


def _place(window, state: dict) -> None:
    """The saved size (at least the window's minimum) and place (only where a screen shows it)."""
    size, place = state.get("size"), state.get("place")
    if _pair(size):
        hint = window.minimumSizeHint()
        window.resize(max(size[0], hint.width()), max(size[1], hint.height()))
    if _pair(place) and window.screen() is not None:
        from PySide6.QtCore import QPoint

        if any(screen.availableGeometry().contains(QPoint(*place)) for screen in window.screen().virtualSiblings()):
            window.move(*place)
    if state.get("maximized") is True:
        window.showMaximized()


def _pair(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(n, int) and 0 <= n < 100_000 for n in value)


def start_folder(settings: dict) -> str:
    """Where New transfer's *To* starts: the last folder a transfer went to, else Settings' download folder,
    else the Downloads folder (as Settings shows it)."""
    for candidate in (settings.get("last_folder"), settings.get("download_folder")):
        if isinstance(candidate, str) and candidate and Path(candidate).is_dir():
            return candidate
    return str(Path.home() / "Downloads")


def note_folder(window, dest: str) -> None:
    """A transfer went to the local folder ``dest``: the next New transfer starts there."""
    if "://" in dest or dest.startswith("site:") or not dest:
        return
    window.settings["last_folder"] = dest
    with Store(window.db_path) as store:
        store.settings.set("last_folder", dest)
