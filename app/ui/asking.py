"""The questions the window asks before it drops data or stops transfers, as Globus and a browser's downloads
list ask: Cancel says what will be deleted and that Retry starts the transfer again; every way out (the close
button, File → Quit, Ctrl+Q, the tray's Quit) asks the same question while transfers run."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from app.jobs import JobState, JobView
from app.units import format_bytes
from backends.core.words import counted, some_of

from .queue_model import display_name


def leaving_choice(window, *, offer_tray: bool) -> str:
    """What the user chose when transfers still run or wait: ``quit`` (they are paused, their data kept),
    ``tray`` (the window hides, they go on) or ``stay``; ``quit`` at once when nothing runs."""
    running = [v for v in window.queue_model.views() if v.state.active or v.state == JobState.QUEUED]
    if not running:
        return "quit"
    box = QMessageBox(QMessageBox.Icon.Question, "Transfers are running",
                      f"{counted(len(running), 'transfer')} {'is' if len(running) == 1 else 'are'} still running or "
                      "waiting. Quitting pauses them; what arrived is kept, and they go on when Ferry starts again.",
                      parent=window)
    keep = box.addButton("Keep running in the tray", QMessageBox.ButtonRole.AcceptRole) \
        if offer_tray and window.tray else None
    stop = box.addButton("Pause them and quit", QMessageBox.ButtonRole.DestructiveRole)
    stay = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(stay)
    box.setEscapeButton(stay)
    box.exec()
    if keep is not None and box.clickedButton() is keep:
        return "tray"
    return "quit" if box.clickedButton() is stop else "stay"


def cancel_selected(window) -> None:
    """Cancel the selected transfers once the user agreed to lose what they fetched (Pause keeps it)."""
    views = [v for v in window.selected_views() if not v.state.terminal]
    if not views:
        return
    box = QMessageBox(QMessageBox.Icon.Warning, "Cancel transfers" if len(views) > 1 else "Cancel transfer",
                      _cancel_question(views), parent=window)
    drop = box.addButton("Cancel and delete", QMessageBox.ButtonRole.DestructiveRole)
    pause = box.addButton("Pause instead", QMessageBox.ButtonRole.ActionRole)
    keep = box.addButton("Keep going", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(keep)
    box.setEscapeButton(keep)
    box.exec()
    verb = {drop: "cancel", pause: "pause"}.get(box.clickedButton())
    for view in views if verb else ():
        window.bridge.call(verb, view.id)


def _cancel_question(views: list[JobView]) -> str:
    """What Cancel deletes, in the user's words: the names, how much, and where it lies."""
    kept = sum(v.bytes_done for v in views)
    uploads = all("://" in v.dest or v.dest.startswith("site:") for v in views)
    where = "on the server" if uploads else "on this computer"
    names = some_of([display_name(v) for v in views], 3)
    much = f"the {format_bytes(kept)} that arrived {where} so far" if kept else f"whatever arrived {where}"
    return (f"Cancel {names}? Ferry deletes {much}; Retry then starts from the beginning. Pause instead keeps it, "
            "and Resume goes on from there.")


def remove_site(window, name: str) -> None:
    """Remove a saved site once the user agreed: its profile and its password in the keyring go; transfers and
    history that used it stay."""
    from app.sites import SiteBook
    from app.store import Store

    box = QMessageBox(QMessageBox.Icon.Question, "Remove site",
                      f"Remove the site {name}? Its settings and the password kept for it in the keyring are "
                      "deleted; transfers and history that used it stay.", parent=window)
    drop = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
    keep = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(keep)
    box.setEscapeButton(keep)
    box.exec()
    if box.clickedButton() is not drop:
        return
    with Store(window.db_path) as store:
        SiteBook(store).remove(name)
    window.refresh_sites()
