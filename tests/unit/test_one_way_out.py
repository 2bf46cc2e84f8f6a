"""One way out to disk: only ``backends/destination`` creates, writes, renames or links files under DEST.

Every call that writes to the file system (``open`` for writing, ``os.open`` with a write flag, ``write_text``,
``os.replace``, ``mkdir``, ``os.link``, ``mkdtemp``…) anywhere else in ``app`` and ``backends`` must be in a
module listed here with what it writes, none of it below a transfer's DEST. A new write elsewhere fails this
test: route it through the destination module, or, when it writes Ferry's own state, say so here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: module → what it writes (never below a transfer's DEST)
OWN_STATE = {
    "app/accessions/convert.py": "the private folder below DEST that fasterq-dump writes into (mkdtemp: new, the "
                                 "user's own); the gzipped files leave it through destination.move_into_place",
    "app/agent/bridge.py": "the agent's log, in Ferry's data folder",
    "app/agent/relay.py": "a relay's spool and record, in the agent's data folder (its files through open_new)",
    "app/agent/server.py": "the agent's socket folder and pid file",
    "app/cluster/plan.py": "a cluster job's work folder beside DEST (user-only: the plan, rounds, progress)",
    "app/cluster/task.py": "a cluster task's own engine folder, in the job's work folder",
    "app/cli/__init__.py": "stdout redirected to /dev/null after a broken pipe",
    "app/cli/preflight.py": "the plot the user named with --plot",
    "app/cli/torrent.py": "the .torrent the user named",
    "app/paths.py": "Ferry's data folder",
    "app/preflight/compare.py": "a temporary folder for the compared copies",
    "app/reports/__init__.py": "the report the user named",
    "app/store/health.py": "the lock file beside Ferry's database, and a damaged database moved aside",
    "app/ui/folder_actions.py": "the user's own new folder or rename in the Files tab's local pane",
    "app/ui/torrents.py": "the .torrent the user named",
    "backends/core/base.py": "a backend's state folder in Ferry's data folder",
    "backends/ftp/upload.py": "an upload's resume record in the state folder",
    "backends/host/portable.py": "an empty user-only file in Ferry's data folder (keep_private, private_file)",
    "backends/ssh/once.py": "host keys trusted for this session only, in a private temporary folder",
    "backends/ssh/openssh.py": "OpenSSH's control sockets, in a private temporary folder",
    "backends/ssh/trust.py": "the user's known_hosts, when asked to trust a host key",
    "backends/ssh/untar.py": "the private folder below DEST that tar unpacks into (mkdtemp: new, the user's own); "
                             "files leave it through destination.move_into_place",
    "backends/ssh/upload.py": "an upload's resume record in the state folder",
    "backends/streams/arriving.py": "a relay's record of what has arrived, in the spool",
    "backends/streams/holds.py": "an upload's lock file beside its resume record, in the state folder",
    "backends/streams/lists.py": "the record of verified files, in the state folder",
    "backends/torrent/download.py": "libtorrent's resume data folder, in the state folder",
    "backends/torrent/swarm.py": "libtorrent's resume data, in the state folder",
    "backends/torrent/tls.py": "the lab CA and certificates, in Ferry's data folder",
}

WRITE_MODES = set("wax+")


def _writes(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        owner = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
        text = ast.unparse(node)
        remote = any(word in owner for word in ("sftp", "client", "control", "ftp", "backend"))
        if name == "open" and owner in ("", "io", "builtins"):
            modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
            modes += [k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
            if any(set(str(m)) & WRITE_MODES for m in modes):
                found.append((node.lineno, text))
        elif name == "open" and owner == "os" and any(f in text for f in ("O_CREAT", "O_WRONLY", "O_RDWR")):
            found.append((node.lineno, text))
        elif name in ("write_text", "write_bytes", "symlink_to", "hardlink_to", "touch", "mkdtemp"):
            found.append((node.lineno, text))
        elif owner == "os" and name in ("replace", "rename", "link", "symlink", "mkdir", "makedirs", "truncate"):
            found.append((node.lineno, text))
        elif owner == "shutil" and name in ("move", "copy", "copy2", "copyfile", "copytree"):
            found.append((node.lineno, text))
        elif name in ("mkdir", "rename") and owner != "os" and not remote:
            found.append((node.lineno, text))
    return found


def test_only_the_destination_module_writes_below_dest():
    unexplained = []
    for root in ("app", "backends"):
        for path in sorted((ROOT / root).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("backends/destination/") or rel in OWN_STATE:
                continue
            unexplained += [f"{rel}:{line}: {text}" for line, text in _writes(path)]
    assert not unexplained, "writes outside backends/destination:\n" + "\n".join(unexplained)


def test_every_module_listed_still_writes_what_it_says():
    """A module that stopped writing leaves the list, so the list stays the truth."""
    idle = [rel for rel in OWN_STATE if not _writes(ROOT / rel)]
    assert not idle, f"listed but writing nothing: {idle}"


def test_the_scan_sees_a_write(tmp_path):
    planted = tmp_path / "_planted_write.py"
    planted.write_text("def f(p):\n    with open(p, 'wb') as fh:\n        fh.write(b'x')\n    p.write_text('y')\n")
    assert sorted(line for line, _ in _writes(planted)) == [2, 4]
