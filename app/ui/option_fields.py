"""A site's protocol options as form fields, made from the backend's own declarations.

Each backend declares its options once (``backends.core.options``: a type, a default and one line of help);
``labferry copy`` turns them into flags, and this widget into the site dialog's rows: a check box for an
on/off option, a list for a choice, a text field (with the default as its placeholder) for the rest. A new
option in a backend appears here with no change to the window.
"""

from __future__ import annotations

import typing
from typing import Literal

from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QLineEdit, QWidget

from backends.core.options import declared, plain_type

#: options the dialog already shows in rows of its own (the key file)
SHOWN_ELSEWHERE = {"identity"}
#: protocols whose sites may carry a lab CA (``ca_file``: a transfer option, not one backend's)
TLS_PROTOCOLS = ("https", "ftps")


_WORDS = {"ssh": "SSH", "tcp": "TCP", "ca": "CA", "bs": "buffer", "bps": "(bit/s)"}
#: what a researcher calls an option (the CLI keeps the backend's own names: --max-handshakes, --none-cipher)
LABELS = {
    "known_hosts": "Known hosts file", "accept_new_host_key": "Trust a new server key without asking",
    "ssh_config": "SSH config file", "max_handshakes": "Connections opened at once",
    "compress": "Compress on the wire", "none_cipher": "Unencrypted data (HPN-SSH; trusted networks only)",
    "stall_seconds": "Give up on a silent stream after (s)", "web_page": "Save a web page where a file was asked",
    "share_connections": "Reuse connections between transfers", "tcp_bs": "TCP buffer (bytes)",
    "bottleneck_bps": "Path's bottleneck (bit/s)", "restart_retries": "Restarts after a fault",
    "transport": "Data transport", "streams": "Streams",
}


def _label(name: str) -> str:
    if name in LABELS:
        return LABELS[name]
    words = [_WORDS.get(w, w) for w in name.split("_")]
    return " ".join([words[0][:1].upper() + words[0][1:], *words[1:]])


def _default_text(f) -> str | None:
    return None if f.default is None or callable(f.default) else str(f.default)


class OptionFields(QWidget):
    """The rows for one protocol's options; ``values()`` gives what the user set (defaults left out)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.form = QFormLayout(self)
        self.form.setContentsMargins(0, 0, 0, 0)
        self.widgets: dict[str, QWidget] = {}

    def show_for(self, protocol: str, spec: type | None, values: dict) -> None:
        """Rebuild the rows for ``spec`` (a backend's options class), filled from a site's saved ``values``."""
        while self.form.rowCount():
            self.form.removeRow(0)
        self.widgets = {}
        if protocol in TLS_PROTOCOLS:
            ca = QLineEdit(str(values.get("ca_file") or ""), self)
            ca.setPlaceholderText("the lab's CA certificate (PEM), when its server uses one")
            self._add("ca_file", "CA file", ca, "a CA certificate that signs this site's server certificate")
        for f, kind in declared(spec) if spec else []:
            if f.name in SHOWN_ELSEWHERE:
                continue
            base, value, help_text = plain_type(kind), values.get(f.name), f.metadata.get("help", "")
            if base is bool:
                widget = QCheckBox(self)
                widget.setChecked(bool(value))
            elif typing.get_origin(base) is Literal:
                widget = QComboBox(self)  # the default first, said to be it: never an empty box
                default = _default_text(f)
                for choice in map(str, typing.get_args(base)):
                    widget.addItem(f"{choice} (default)" if choice == default else choice, choice)
                if default is not None:
                    widget.setCurrentIndex(max(0, widget.findData(default)))
                if value is not None:
                    widget.setCurrentIndex(max(0, widget.findData(str(value))))
                widget.setProperty("default_choice", default)
            else:
                widget = QLineEdit("" if value is None else str(value), self)
                if f.default is not None and not callable(f.default):
                    widget.setPlaceholderText(f"default: {f.default}")
            self._add(f.name, _label(f.name), widget, help_text)

    def _add(self, name: str, label: str, widget: QWidget, help_text: str) -> None:
        widget.setToolTip(help_text)
        widget.setObjectName(f"option_{name}")
        self.form.addRow(label, widget)
        self.widgets[name] = widget

    def values(self) -> dict:
        """The options the user set, as text or on/off; the front door checks their types."""
        found: dict = {}
        for name, widget in self.widgets.items():
            if isinstance(widget, QCheckBox):
                if widget.isChecked():
                    found[name] = True
            elif isinstance(widget, QComboBox):
                chosen = widget.currentData()
                if chosen and chosen != widget.property("default_choice"):
                    found[name] = chosen
            elif isinstance(widget, QLineEdit) and widget.text().strip():
                found[name] = widget.text().strip()
        return found
