"""The desktop around the window: a second ``labferry gui URL`` hands the URL to the window already open (one
window per user and data folder), the empty queue tells a newcomer how to begin, what cannot be opened is said,
and ``make run`` finds the system libraries Qt's X11 plugin needs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from app.engine import JobState

from .test_window import job

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_start_hands_its_address_to_the_open_window(qtbot, window, nginx, plain_file, tmp_path,
                                                             ferry_home):
    from app.ui.instance import InstanceServer

    server = InstanceServer(window.open_items, window)
    second = subprocess.Popen([sys.executable, "-m", "app", "gui", nginx.url("plain.bin", scheme="http")],
                              env=dict(os.environ, LABFERRY_HOME=str(ferry_home), QT_QPA_PLATFORM="offscreen"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    qtbot.waitUntil(lambda: second.poll() is not None, timeout=30_000)  # the window answers while it waits
    assert second.returncode == 0, second.stderr
    qtbot.waitUntil(lambda: (j := job(window, "plain.bin")) is not None and j.state == JobState.DONE, timeout=60_000)
    assert (tmp_path / "plain.bin").stat().st_size == plain_file.size
    server.close()


def test_an_address_macos_hands_over_as_a_file_open_event_is_fetched(qtbot, window, nginx, plain_file, tmp_path):
    """On macOS a magnet: link clicked in a browser or a .torrent double-clicked in Finder reaches the running
    Ferry.app as an Apple Event, which Qt delivers to the application as QFileOpenEvent (Ferry.app's Info.plist
    claims both); the window takes it as a second start's argument."""
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QFileOpenEvent
    from PySide6.QtWidgets import QApplication

    QApplication.sendEvent(QApplication.instance(), QFileOpenEvent(QUrl(nginx.url("plain.bin", scheme="http"))))
    qtbot.waitUntil(lambda: (j := job(window, "plain.bin")) is not None and j.state == JobState.DONE, timeout=60_000)
    assert (tmp_path / "plain.bin").stat().st_size == plain_file.size


def test_without_a_window_open_a_start_does_not_hand_over(ferry_home, monkeypatch):
    """No window listens for this data folder: ``hand_over`` says so at once (the caller opens a window)."""
    from PySide6.QtWidgets import QApplication

    from app.ui.instance import hand_over

    QApplication.instance() or QApplication([])
    monkeypatch.setenv("LABFERRY_HOME", str(ferry_home / "elsewhere"))
    assert hand_over(["https://example.org/x"]) is False


def test_the_empty_queue_says_how_to_begin(qtbot, window, nginx, plain_file):
    assert window.empty_hint.isVisible() and "New transfer" in window.empty_hint.text()
    window.submit(nginx.url("plain.bin", scheme="http"), str(Path(window.settings["download_folder"]) / "p.bin"))
    qtbot.waitUntil(lambda: not window.empty_hint.isVisible(), timeout=10_000)


def test_what_cannot_be_opened_is_said(qtbot, window):
    window.open_items(["not a thing at all", "/no/such/file.fastq"])
    assert "Ferry cannot open not a thing at all, /no/such/file.fastq" in window.last_error


def _qt_libs():
    spec = importlib.util.spec_from_file_location("qt_libs", ROOT / "installers" / "qt_libs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_missing_qt_libraries_are_named_by_their_packages():
    qt_libs = _qt_libs()
    ldd = ("\tlibQt6XcbQpa.so.6 => /x/libQt6XcbQpa.so.6 (0x1)\n\tlibxcb-icccm.so.4 => not found\n"
           "\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x2)\n"
           "\tlibxcb-keysyms.so.1 => not found\n\tlibxcb-icccm.so.4 => not found\n\tlibweird.so.9 => not found\n")
    missing = qt_libs.not_found(ldd)
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libweird.so.9"]  # not xcb-cursor0: it is there
    assert qt_libs.packages_for(missing) == (["libxcb-icccm4", "libxcb-keysyms1"], ["libweird.so.9"])


def test_this_machine_has_what_the_window_needs():
    """The check ``make run`` runs, for real: on this machine (set up by .ci/run) nothing is missing."""
    proc = subprocess.run([sys.executable, str(ROOT / "installers" / "qt_libs.py"), "--check"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    found = _qt_libs().plugin()
    assert found is None or _qt_libs().missing_now(found) == []


def test_every_action_has_an_icon_and_its_own_shortcut(window):
    from PySide6.QtGui import QKeySequence

    shortcuts = {}
    for name, action in window.actions_by_name.items():
        assert not action.icon().isNull(), f"{name} has no icon"
        keys = action.shortcut().toString(QKeySequence.SequenceFormat.PortableText)
        assert keys, f"{name} has no shortcut"
        assert keys not in shortcuts, f"{name} and {shortcuts.get(keys)} share {keys}"
        shortcuts[keys] = name
        assert action.shortcut().toString(QKeySequence.SequenceFormat.NativeText) in action.toolTip()


def test_each_kind_of_transfer_has_its_icon(qtbot, window, nginx, plain_file, tmp_path):
    from PySide6.QtCore import Qt

    from app.ui.icons import kind_of

    assert kind_of("ena:PRJEB1", "/x") == "accession" and kind_of("magnet:?xt=urn:btih:aa", "/x") == "torrent"
    assert kind_of("https://h/run_1.fastq.gz", "/x") == "reads" and kind_of("/data/a.bam", "sftp://h/") == "upload"
    assert kind_of("sftp://h/run7/", "/x") == "folder" and kind_of("https://h/x.tar", "/x") == "archive"
    window.submit(nginx.url("plain.bin", scheme="http"), str(tmp_path / "plain.bin"))
    qtbot.waitUntil(lambda: job(window, "plain.bin") is not None, timeout=10_000)
    index = window.queue_model.index(window.queue_model.row_of(job(window, "plain.bin").id), 0)
    assert not window.queue_model.data(index, Qt.ItemDataRole.DecorationRole).isNull()


def test_the_theme_follows_the_desktop_and_the_icons_follow_the_theme(window):
    from PySide6.QtGui import QGuiApplication, QPalette

    from app.ui.panels import apply_theme

    try:
        apply_theme("dark")
        dark = QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness()
        window.refresh_icons()
        assert dark < 80 and not window.actions_by_name["new"].icon().isNull()
        window.settings["theme"] = "system"
        window.follow_system_theme()  # what the desktop's light/dark switch calls
        assert QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() != dark or \
            QGuiApplication.styleHints().colorScheme().name == "Dark"
    finally:
        apply_theme("light")


def test_a_magnet_given_to_a_second_start_is_fetched_by_the_open_window(qtbot, window, tmp_path, ferry_home,
                                                                        monkeypatch):
    """``labferry gui MAGNET`` while a window is open: the window asks which peer holds it, and fetches it."""
    from PySide6.QtWidgets import QInputDialog

    from app.ui.instance import InstanceServer
    from tests.integration.conftest import labferry, sha256_of, write_random
    from tests.integration.test_torrent import seeding

    data = tmp_path / "shared"
    data.mkdir()
    write_random(data / "lane3.fastq.gz", 5 * 1024 * 1024, seed=33)
    made = labferry("torrent", "create", str(data / "lane3.fastq.gz"), "-o", str(tmp_path / "lane3.torrent"),
                    "--public", env_home=tmp_path / "seed-home")  # a private torrent has no usable magnet
    assert made.returncode == 0, made.stderr
    magnet = next(word for word in made.stdout.split() if word.startswith("magnet:?"))
    with seeding(tmp_path / "lane3.torrent", data, tmp_path / "seed-home") as seed:
        monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: (f"127.0.0.1:{seed.port}", True))
        server = InstanceServer(window.open_items, window)
        second = subprocess.Popen([sys.executable, "-m", "app", "gui", magnet],
                                  env=dict(os.environ, LABFERRY_HOME=str(ferry_home), QT_QPA_PLATFORM="offscreen"),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        qtbot.waitUntil(lambda: second.poll() is not None, timeout=30_000)
        assert second.returncode == 0, second.stderr
        qtbot.waitUntil(lambda: any(v.source.startswith("magnet:") and v.state.terminal
                                    for v in window.queue_model.views()), timeout=120_000)
        view = next(v for v in window.queue_model.views() if v.source.startswith("magnet:"))
        assert view.state == JobState.DONE, view.error
        server.close()
    assert sha256_of(tmp_path / "lane3.fastq.gz") == sha256_of(data / "lane3.fastq.gz")
