"""Dialogs: a new transfer by hand, a site profile, the settings."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.sites import PROTOCOLS, Site, checked_site_options, site_option_spec
from app.ui.option_fields import OptionFields
from app.units import parse_rate, parse_schedule
from backends.core.checksums import parse_checksum
from backends.core.errors import TransferError

from .what_choice import what_box
from .words import as_folder, for_window


def with_browse(edit: QLineEdit, folder: bool, parent: QWidget, start: str | None = None) -> QWidget:
    """``edit`` with a Browse… button beside it; the chooser opens at what the box holds, else at ``start`` (a
    key file's chooser at ~/.ssh), else in the home folder, never in the folder Ferry happened to start in."""
    box = QWidget(parent)
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.addWidget(edit)
    button = QPushButton("Browse…", box)

    def pick() -> None:
        where = edit.text().strip() or start or str(Path.home())
        path = (QFileDialog.getExistingDirectory(parent, "Choose a folder", where) if folder
                else QFileDialog.getOpenFileName(parent, "Choose a file", where)[0])
        if path:
            edit.setText(path)

    button.clicked.connect(pick)
    row.addWidget(button)
    return box


def problem_label(parent: QWidget) -> QLabel:
    """Where a dialog says what is wrong with what was typed: in the dialog, never a box over it."""
    label = QLabel("", parent)
    label.setWordWrap(True)
    label.setObjectName("problem")
    return label


def say_problem(label: QLabel, text: str) -> None:
    import html

    label.setText(f"<span style='color:#c0392b'>{html.escape(for_window(text))}</span>")


#: what to do with files already at the destination (the CLI's default, --sync, --overwrite)
EXISTING_CHOICES = [("Stop, replace nothing", "stop"), ("Skip unchanged files (sync)", "sync"),
                    ("Replace them (overwrite)", "overwrite")]
EXISTING_OPTIONS = {"stop": {}, "sync": {"sync": "size-mtime"}, "overwrite": {"overwrite": True}}


#: New transfer's What: (label, the backend's action or "copy")
class NewTransferDialog(QDialog):
    """Source, destination and options; the engine checks them when the job is submitted."""

    def __init__(self, parent=None, source: str = "", dest: str = "", sites: list[Site] | None = None,
                 browse=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("New transfer")
        form = QFormLayout(self)
        self.what = what_box(self)
        form.addRow("What", self.what)
        self.source = QLineEdit(source, self)
        self.source.setPlaceholderText("https://…, sftp://user@host/path, site:NAME/path, a local file, or an "
                                       "accession (PRJEB12345, SRR1234567, GSE147507)")
        # wide enough that the hint is read whole, not cut to "ttps://…, sftp://u…"
        self.source.setMinimumWidth(self.source.fontMetrics().horizontalAdvance(self.source.placeholderText()) + 24)
        self.dest = QLineEdit(dest, self)
        self.dest.setPlaceholderText("a local folder, or sftp://… / site:NAME/ to upload")
        self.streams = QComboBox(self)
        self.streams.setEditable(True)
        self.streams.addItems(["auto", "1", "2", "4", "8", "16", "32", "64"])
        self.checksum = QLineEdit(self)
        self.checksum.setPlaceholderText("optional: sha256:HEX or md5:HEX")
        self.limit = QLineEdit(self)
        self.limit.setPlaceholderText("optional: 50M (MiB/s) or 400Mbit")
        self.existing = QComboBox(self)
        for label, key in EXISTING_CHOICES:
            self.existing.addItem(label, key)
        form.addRow("From", with_browse(self.source, False, self))
        if sites and browse is not None:
            remote = QPushButton("Browse a site…", self)
            remote.clicked.connect(lambda: self._browse_site(browse))
            form.addRow("", remote)
        form.addRow("To", with_browse(self.dest, True, self))
        if sites and browse is not None:
            target = QPushButton("Send to a site folder…", self)
            target.clicked.connect(lambda: self._browse_site(browse, folder=True))
            form.addRow("", target)
        if sites:
            hint = QLabel("Sites: " + ", ".join(f"site:{s.name}/" for s in sites), self)
            hint.setWordWrap(True)
            form.addRow("", hint)
        ssh = self._agent_choices([s.name for s in sites or [] if s.protocol in ("sftp", "scp")])
        form.addRow("Streams", self.streams)
        if ssh:
            form.addRow("Run on", self.run_on)
            form.addRow("Send", self.via)
        else:  # no SSH site: nowhere to run or relay, and a widget left out of the form would lie over From
            self.run_on.hide()
            self.via.hide()
        form.addRow("Checksum", self.checksum)
        form.addRow("Rate limit", self.limit)
        form.addRow("If files exist", self.existing)
        self.problem = problem_label(self)
        form.addRow(self.problem)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _agent_choices(self, ssh: list[str]) -> list[str]:
        """Run on and Send: this computer and directly, or an SSH site's agent (``--on``, ``--via``)."""
        self.run_on = QComboBox(self)
        self.run_on.addItem("This computer", "")
        self.via = QComboBox(self)
        self.via.addItem("Directly", "")
        for name in ssh:
            self.run_on.addItem(f"the agent on {name}", name)
            self.via.addItem(f"through the agent on {name} (relay)", name)
        self.run_on.setToolTip("Run the whole transfer on a site's host (Ferry's agent there): it goes on when this "
                               "computer sleeps; From and To are as that host sees them")
        self.via.setToolTip("Store-and-forward through a site's host: this computer's hop over the last mile, the "
                            "agent's over the backbone, both at once")
        return ssh

    def _browse_site(self, browse, folder: bool = False) -> None:
        chosen = browse(self, folder)
        if chosen:
            (self.dest if folder else self.source).setText(chosen)

    def values(self) -> dict:
        streams = self.streams.currentText().strip() or "auto"
        return {
            "source": self.source.text().strip(),
            "dest": as_folder(self.dest.text().strip()),  # the To box names a folder
            "streams": "auto" if streams == "auto" else int(streams),
            "checksum": parse_checksum(self.checksum.text()) if self.checksum.text().strip() else None,
            "limit_rate": parse_rate(self.limit.text()) if self.limit.text().strip() else None,
            "existing": dict(EXISTING_OPTIONS[self.existing.currentData()]),
            "on": self.run_on.currentData() or None,
            "via": self.via.currentData() or None,
            "what": self.what.currentData(),
        }

    def _accept(self) -> None:
        problem = None
        try:
            values = self.values()
            if not values["source"] or not values["dest"]:
                problem = "Give both where to copy from and where to."
            elif values["on"] and values["via"]:
                problem = "Run on an agent or send through one, not both."
            elif values["streams"] != "auto" and not 1 <= values["streams"] <= 64:
                problem = "Streams must be auto or a number from 1 to 64."
        except TransferError as exc:
            problem = str(exc)
        except ValueError:
            problem = "Streams must be auto or a number from 1 to 64."
        if not problem and not values["on"]:  # on an agent, To is a path on that site's host
            problem = self._make_local_folder(values["dest"])
        if problem:
            say_problem(self.problem, problem)  # under the form; what was typed stays as it was
            return
        self.accept()

    @staticmethod
    def _make_local_folder(dest: str) -> str | None:
        """The To box names a folder: one on this computer that is not there yet is made now, as a file manager's
        Save to does (through the one way out to disk: no link entered). A sentence when it cannot be."""
        from backends.destination import Destination

        if "://" in dest or dest.startswith("site:"):
            return None
        try:
            Destination(Path(dest).expanduser()).folder("")
        except TransferError as exc:
            return str(exc)
        return None


class SiteDialog(QDialog):
    """Add or edit a collaborator site; the secret goes to the OS keyring, never to the database."""

    def __init__(self, parent=None, site: Site | None = None, test=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Site profile")
        self._test = test
        form = QFormLayout(self)
        self.name = QLineEdit(site.name if site else "", self)
        self.name.setReadOnly(site is not None)
        self.protocol = QComboBox(self)
        self.protocol.addItems(PROTOCOLS)
        self.host = QLineEdit(site.host if site else "", self)
        self.port = QSpinBox(self)
        self.port.setRange(0, 65535)
        self.port.setSpecialValueText("default")
        self.user = QLineEdit(site.user or "" if site else "", self)
        self.folder = QLineEdit(site.remote_folder if site else "", self)
        self.streams = QComboBox(self)
        self.streams.setEditable(True)
        self.streams.addItems(["auto", "4", "8", "16", "32", "64"])
        self.key = QLineEdit(site.key_file or "" if site else "", self)
        self.secret = QLineEdit(self)
        self.secret.setEchoMode(QLineEdit.EchoMode.Password)
        self.secret.setPlaceholderText("the login's password, or the key file's passphrase (kept in the OS keyring)")
        self.remember = QCheckBox("Remember it in the OS keyring", self)
        self.remember.setChecked(True)
        self.options = OptionFields(self)  # the protocol's own options, from its backend's declarations
        self.options_box = QGroupBox(self)
        QVBoxLayout(self.options_box).addWidget(self.options)
        self._saved_options = dict(site.options) if site else {}
        self.protocol.currentTextChanged.connect(self._protocol_changed)
        if site:
            self.protocol.setCurrentText(site.protocol)
            self.port.setValue(site.port or 0)
            self.streams.setCurrentText(site.streams)
        form.addRow("Name", self.name)
        form.addRow("Protocol", self.protocol)
        form.addRow("Host", self.host)
        form.addRow("Port", self.port)
        form.addRow("User", self.user)
        form.addRow("Default folder", self.folder)
        form.addRow("Streams", self.streams)
        form.addRow("Key file", with_browse(self.key, False, self, str(Path.home() / ".ssh")))
        form.addRow("Password", self.secret)
        form.addRow("", self.remember)
        form.addRow(self.options_box)
        self._protocol_changed(self.protocol.currentText())
        self.status = QLabel("", self)  # above the buttons, its room kept: a message never squeezes the form
        self.status.setWordWrap(True)
        self.status.setMinimumHeight(3 * self.fontMetrics().lineSpacing())
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.status)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self)
        self.test_button = buttons.addButton("Test connection", QDialogButtonBox.ButtonRole.ActionRole)
        self.test_button.clicked.connect(self._run_test)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _protocol_changed(self, protocol: str) -> None:
        backend, spec = site_option_spec(protocol)
        self.options_box.setTitle(f"{protocol} options (the {backend} backend's)")
        self.options.show_for(protocol, spec, self._saved_options)

    def site(self) -> Site:
        protocol = self.protocol.currentText()
        return Site(
            name=self.name.text().strip(), protocol=protocol, host=self.host.text().strip(),
            port=self.port.value() or None, user=self.user.text().strip() or None,
            remote_folder=self.folder.text().strip(), streams=self.streams.currentText().strip() or "auto",
            key_file=self.key.text().strip() or None,
            options=checked_site_options(protocol, self.options.values()),
        ).validate()

    def secret_to_keep(self) -> str | None:
        return self.secret.text() if self.secret.text() and self.remember.isChecked() else None

    def _run_test(self) -> None:
        if self._test is None:
            return
        try:
            site = self.site()
        except TransferError as exc:
            self.report(str(exc), False)
            return
        self._test(site, self.secret.text() or None, self.report)

    def report(self, message: str, ok: bool) -> None:
        import html

        color = "#2e7d32" if ok else "#c0392b"
        self.status.setText(f"<span style='color:{color}'>{html.escape(for_window(message))}</span>")

    def _accept(self) -> None:
        """A refusal is said under the form, next to what the user typed (nothing is lost, no box to dismiss)."""
        try:
            self.site()
        except TransferError as exc:
            self.report(str(exc), False)
            return
        self.accept()


class SettingsDialog(QDialog):
    KEYS = ("download_folder", "max_jobs", "default_streams", "limit_rate", "rate_schedule", "verify",
            "notifications", "theme", "preflight_max_age_days")

    def __init__(self, values: dict, data_folder: Path, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        form = QFormLayout(self)
        self.download_folder = QLineEdit(values.get("download_folder") or str(Path.home() / "Downloads"), self)
        self.max_jobs = QSpinBox(self)
        self.max_jobs.setRange(1, 16)
        self.max_jobs.setValue(int(values.get("max_jobs", 3)))
        self.default_streams = QComboBox(self)
        self.default_streams.setEditable(True)
        self.default_streams.addItems(["auto", "4", "8", "16", "32", "64"])
        self.default_streams.setCurrentText(str(values.get("default_streams", "auto")))
        self.limit_rate = QLineEdit(values.get("limit_rate") or "", self)
        self.limit_rate.setPlaceholderText("no cap (or 50M for 50 MiB/s, 400Mbit)")
        self.rate_schedule = QLineEdit(values.get("rate_schedule") or "", self)
        self.rate_schedule.setPlaceholderText("none (or 08:00,10M 18:00,off)")
        self.rate_schedule.setToolTip("A cap that follows the clock (local time), as rclone's --bwlimit: at 08:00 "
                                      "10 MiB/s, from 18:00 none. Running transfers follow each change.")
        self.verify = QCheckBox("Verify every transfer with SHA-256", self)
        self.verify.setChecked(bool(values.get("verify", True)))
        self.verify.setToolTip("Ferry always computes SHA-256; this compares it with the server's when possible.")
        self.notifications = QCheckBox("Notify when a transfer finishes or fails", self)
        self.notifications.setChecked(bool(values.get("notifications", True)))
        self.theme = QComboBox(self)
        self.theme.addItems(["system", "light", "dark"])
        self.theme.setCurrentText(values.get("theme", "system"))
        form.addRow("Download folder", with_browse(self.download_folder, True, self))
        form.addRow("Transfers at once", self.max_jobs)
        form.addRow("Default streams", self.default_streams)
        form.addRow("Bandwidth cap", self.limit_rate)
        form.addRow("Bandwidth schedule", self.rate_schedule)
        form.addRow("", self.verify)
        form.addRow("", self.notifications)
        self.preflight_age = QSpinBox(self)
        self.preflight_age.setRange(1, 365)
        self.preflight_age.setSuffix(" days")
        self.preflight_age.setValue(int(float(values.get("preflight_max_age_days", 7))))
        self.preflight_age.setToolTip("Streams learned by a preflight are used this long; an older measurement is "
                                      "redone before it is trusted again.")
        form.addRow("Theme", self.theme)
        form.addRow("Re-measure paths after", self.preflight_age)
        where = QLabel(f"{data_folder} (set LABFERRY_HOME to move it)", self)
        where.setWordWrap(True)
        form.addRow("Ferry's data", where)
        self.problem = problem_label(self)
        form.addRow(self.problem)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def values(self) -> dict:
        return {
            "download_folder": self.download_folder.text().strip(),
            "max_jobs": self.max_jobs.value(),
            "default_streams": self.default_streams.currentText().strip() or "auto",
            "limit_rate": self.limit_rate.text().strip(),
            "rate_schedule": self.rate_schedule.text().strip(),
            "verify": self.verify.isChecked(),
            "notifications": self.notifications.isChecked(),
            "theme": self.theme.currentText(),
            "preflight_max_age_days": self.preflight_age.value(),
        }

    def _accept(self) -> None:
        try:
            if self.limit_rate.text().strip():
                parse_rate(self.limit_rate.text())
            if self.rate_schedule.text().strip():
                parse_schedule(self.rate_schedule.text())
        except TransferError as exc:
            say_problem(self.problem, str(exc))
            return
        self.accept()
