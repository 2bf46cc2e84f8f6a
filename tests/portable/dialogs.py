"""Dialogs filled as a user fills them: fields found by their visible labels, typed into, OK clicked. Qt only,
so the window's tests on every OS share them."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QFormLayout, QLabel, QLineEdit


def field(dialog, label: str) -> QLineEdit:
    """The line edit on the row whose visible label is ``label`` (with or without a Browse… button beside it)."""
    form = dialog.findChild(QFormLayout)
    for row in range(form.rowCount()):
        shown = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        if shown and isinstance(shown.widget(), QLabel) and shown.widget().text().replace("&", "") == label:
            widget = form.itemAt(row, QFormLayout.ItemRole.FieldRole).widget()
            return widget if isinstance(widget, QLineEdit) else widget.findChild(QLineEdit)
    raise AssertionError(f"no field labelled {label!r}")


def fill_and_accept(qtbot, values: dict[str, str], seen: list) -> None:
    """When the modal dialog is up: type into each labelled field, press OK."""
    def act() -> None:
        dialog = QApplication.activeModalWidget()
        if dialog is None:
            QTimer.singleShot(50, act)
            return
        seen.append(dialog.windowTitle())
        for label, text in values.items():
            edit = field(dialog, label)
            edit.clear()
            QTest.keyClicks(edit, text)
        ok = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok)
        QTest.mouseClick(ok, Qt.MouseButton.LeftButton)
    QTimer.singleShot(50, act)
