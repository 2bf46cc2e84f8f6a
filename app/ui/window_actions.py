"""The window's actions: one ``QAction`` each, on the toolbar and in the menu bar (with its Alt keys), so every
command is reachable by mouse, by shortcut and by keyboard alone. Each calls its slot with the arguments it
means: an action's ``triggered(bool)`` reaching a slot's first parameter once left New transfer dead."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QToolBar

from .asking import cancel_selected
from .help_menu import add_help_menu

#: name → (label, shortcut); the slot is the window's (``_slots``)
ACTIONS = {
    "new": ("New transfer…", QKeySequence.StandardKey.New),
    "public": ("Public data…", "Ctrl+Shift+P"),
    "pause": ("Pause", "Ctrl+P"),
    "resume": ("Resume", "Ctrl+Shift+R"),
    "cancel": ("Cancel", "Ctrl+."),
    "retry": ("Retry", "Ctrl+R"),
    "remove": ("Remove", QKeySequence.StandardKey.Delete),
    "up": ("Move up", "Ctrl+Up"),
    "down": ("Move down", "Ctrl+Down"),
    "clear": ("Clear finished", "Ctrl+Shift+Del"),
    "site": ("Add site…", "Ctrl+Shift+N"),
    "torrent": ("Create torrent…", "Ctrl+Shift+B"),
    "paste": ("Paste", QKeySequence.StandardKey.Paste),
    "preflight": ("Preflight…", "Ctrl+Shift+T"),
    "settings": ("Settings…", "Ctrl+,"),
}
#: on the toolbar with an icon only (their text is in the menu and the tooltip)
ICON_ONLY = ("remove", "up", "down", "clear", "settings", "paste")
#: the menu bar: title (with its Alt key) → action names, None for a separator
MENUS = {
    "&File": ("new", "public", "paste", None, "torrent", None, "settings"),
    "&Transfers": ("pause", "resume", "retry", "cancel", "remove", None, "up", "down", None, "clear"),
    "&Sites": ("site", "preflight"),
}


def _slots(window) -> dict:
    return {
        "new": lambda: window.new_transfer(), "public": lambda: window.public_data(),
        "pause": lambda: window._each_selected("pause"), "resume": lambda: window._each_selected("resume"),
        "cancel": lambda: cancel_selected(window), "retry": lambda: window._each_selected("resume"),
        "remove": lambda: window._each_selected("remove"), "up": lambda: window._move(-1),
        "down": lambda: window._move(1), "clear": lambda: window.clear_finished(),
        "site": lambda: window.edit_site(None), "torrent": lambda: window.create_torrent(),
        "paste": lambda: window.paste(), "preflight": lambda: window.open_preflight(),
        "settings": lambda: window.edit_settings(),
    }


def build_actions(window) -> dict[str, QAction]:
    """The toolbar and the menu bar of ``window``; returns its actions by name."""
    bar = QToolBar("Transfers", window)
    bar.setObjectName("transfers")
    window.addToolBar(bar)
    slots, actions = _slots(window), {}
    for name, (label, shortcut) in ACTIONS.items():
        action = QAction(label, window)
        action.setShortcut(shortcut)
        action.setToolTip(f"{label.rstrip('…')} ({action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)})")
        if name in ICON_ONLY:
            action.setPriority(QAction.Priority.LowPriority)
        action.triggered.connect(slots[name])
        bar.addAction(action)
        actions[name] = action
    bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    _menus(window, actions)
    return actions


def _menus(window, actions: dict[str, QAction]) -> None:
    menubar = window.menuBar()
    for title, names in MENUS.items():
        menu = menubar.addMenu(title)
        for name in names:
            menu.addSeparator() if name is None else menu.addAction(actions[name])
        if title == "&File":
            menu.addSeparator()
            quit_action = menu.addAction("Quit", window.quit_asking)
            # the platform's own (Cmd+Q, Ctrl+Q); Windows and bare X11 define none, so Ctrl+Q there
            quit_action.setShortcuts(QKeySequence.keyBindings(QKeySequence.StandardKey.Quit)
                                     or [QKeySequence("Ctrl+Q")])
    view = menubar.addMenu("&View")
    for index in range(window.tabs.count()):
        name = window.tabs.tabText(index)
        tab = view.addAction(name, lambda i=index: window.tabs.setCurrentIndex(i))
        tab.setShortcut(f"Alt+{index + 1}")
    view.addSeparator()
    details = view.addAction("Details pane")
    details.setCheckable(True)
    details.setChecked(True)
    details.setShortcut("Ctrl+D")
    details.toggled.connect(window.show_details)
    window.details_action = details
    add_help_menu(window)
