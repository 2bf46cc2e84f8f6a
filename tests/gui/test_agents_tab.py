"""The window and a DTN's agent: the Agents tab shows a real agent's queue live (reached over a real sshd), with
pause, resume and cancel; New transfer runs a job on the agent or relays through it; a remote job that ends
is announced; the site list shows which hosts run an agent, found by trying."""

from __future__ import annotations

import json

from tests.integration.conftest import MiB, sha256_of, write_random


def _use_dtn(win, dtn) -> None:
    from app.store import Store

    with Store(win.db_path) as store:  # the agent's command on that host (a test DTN: a wrapper script)
        store.settings.set("agent.dtn", {"command": str(dtn.command)})
    win.refresh_sites()


def _remote(win, qtbot, test, timeout: int = 60000):
    qtbot.waitUntil(lambda: any(test(v) for v in win.agents.model.views()), timeout=timeout)
    return next(v for v in win.agents.model.views() if test(v))


def _select(win, job_id: int) -> None:
    from PySide6.QtCore import QItemSelectionModel

    row = win.agents.model.row_of(job_id)
    win.agents.table.selectionModel().select(
        win.agents.model.index(row, 0),
        QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)


def test_a_job_run_on_the_agent_is_shown_paused_resumed_and_announced(window, qtbot, dtn, nginx, tmp_path):
    win = window
    _use_dtn(win, dtn)
    digest = write_random(nginx.data / "remote-view.bin", 32 * MiB, seed=31)
    dest = dtn.home.parent / "remote-view"
    dest.mkdir()
    win.tabs.setCurrentWidget(win.agents)
    win.agents.submit_on("dtn", nginx.url("remote-view.bin"), f"{dest}/",
                         {"ca_file": nginx.ca_file, "limit_rate": 4 * MiB})
    running = _remote(win, qtbot, lambda v: v.state.value == "running" and v.bytes_done > 0)
    assert "running" in win.agents.state.text() or "Connected" in win.agents.state.text()
    assert win.agents.model.data(win.agents.model.index(win.agents.model.row_of(running.id), 0)) == "remote-view.bin"
    _select(win, running.id)
    win.agents.buttons["pause"].click()
    _remote(win, qtbot, lambda v: v.id == running.id and v.state.value == "paused")
    win.agents.buttons["resume"].click()
    _remote(win, qtbot, lambda v: v.id == running.id and v.state.value == "done", timeout=90000)
    qtbot.waitUntil(lambda: win.last_notice is not None and win.last_notice[0] == "Finished on dtn", timeout=10000)
    assert sha256_of(dest / "remote-view.bin") == digest
    # the host was found to run an agent: the site list says so
    sites = win.sidebar.sites_item
    assert any(sites.child(i).text(0) == "dtn · agent" for i in range(sites.childCount()))


def test_cancel_on_the_agent_from_the_window(window, qtbot, dtn, nginx):
    win = window
    _use_dtn(win, dtn)
    write_random(nginx.data / "remote-cancel.bin", 32 * MiB, seed=32)
    dest = dtn.home.parent / "remote-cancel"
    dest.mkdir()
    win.agents.submit_on("dtn", nginx.url("remote-cancel.bin"), f"{dest}/",
                         {"ca_file": nginx.ca_file, "limit_rate": 2 * MiB})
    running = _remote(win, qtbot, lambda v: v.state.value == "running" and v.bytes_done > 0)
    _select(win, running.id)
    win.agents.buttons["cancel"].click()
    _remote(win, qtbot, lambda v: v.id == running.id and v.state.value == "cancelled")
    assert not (dest / "remote-cancel.bin").exists()


def test_new_transfer_relays_through_the_agent(window, qtbot, dtn, collab, tmp_path):
    from app.ui.dialogs import NewTransferDialog

    win = window
    _use_dtn(win, dtn)
    source = tmp_path / "relayed.fastq"
    digest = write_random(source, 24 * MiB, seed=33)
    dialog = NewTransferDialog(win, str(source), "site:collab/", win._sites())
    dialog.via.setCurrentIndex(dialog.via.findData("dtn"))
    values = dialog.values()
    assert values["via"] == "dtn" and values["on"] is None
    win.submit(values["source"], values["dest"], **win.relay_choice(values))
    qtbot.waitUntil(lambda: any(v.state.value in ("done", "failed") for v in win.queue_model.views()), timeout=90000)
    view = win.queue_model.views()[0]
    assert view.state.value == "done", view.error
    assert view.backend == "relay" and len(view.result["hops"]) == 2
    assert sha256_of(collab / "relayed.fastq") == digest
    assert json.dumps(view.result["sha256"]) == json.dumps(digest)
