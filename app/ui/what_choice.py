"""New transfer's *What*: a copy, a Pack or an Unpack here, or a folder sent as one archive made as it goes,
and what each asks of the front door."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox

WHAT_CHOICES = (("Copy", "copy"), ("Pack into an archive (.tar)", "pack"), ("Unpack an archive", "unpack"),
                ("Send a folder as one archive", "send-packed"))


def what_overrides(what: str, source: str = "") -> dict:
    """The front door's overrides for a What choice other than Copy: the folder sent as one tar made as it goes
    (``--pack``), an archive on a site or server unpacked here as it arrives (``--unpack``), or a Pack or Unpack
    of this computer's files (the ``archive`` backend)."""
    if what == "send-packed":
        return {"pack": True}
    if what == "unpack" and ("://" in source or source.startswith("site:")):
        return {"unpack": True}
    return {"backend": "archive", "backend_options": {"action": what}}


def what_box(parent) -> QComboBox:
    box = QComboBox(parent)
    for label, key in WHAT_CHOICES:
        box.addItem(label, key)
    box.setToolTip("Copy From to To; or pack the folder From into an archive in To (one .tar, written by several "
                   "workers); or unpack the archive From (here, or on a site as it arrives) into the folder To; or "
                   "send the folder From to a server as one .tar made as it goes, never written here")
    return box
