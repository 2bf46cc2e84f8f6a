"""The window says what to press, never a command-line flag, an errno or empty parentheses (``app/ui/words.py``).
The sentences are Ferry's own, made by the code that says them."""

from __future__ import annotations

import re

import pytest

from app.sites import protocol_name
from app.ui.words import for_window
from backends.core.errors import Transient


def _clash_sentence(tmp_path) -> str:
    from backends.core.base import TransferOptions
    from backends.core.errors import LocalError
    from backends.destination import Destination
    from backends.streams.folder import RemoteFile, choose, claim_all

    (tmp_path / "a.fq").write_text("x")
    destination = Destination(tmp_path)
    files = [RemoteFile("a.fq", 1, None)]
    claim_all(files, [], destination)
    with pytest.raises(LocalError) as caught:
        choose(files, destination, TransferOptions(), None)
    return str(caught.value)


def _given_up() -> str:
    return str(Transient("The connection to 127.0.0.1:22 broke (reset); Ferry will retry.").given_up(6))


SENTENCES = {
    "clash": _clash_sentence,
    "given up": lambda tmp_path: _given_up(),
    "host key": lambda tmp_path: ("The host key of example.org is not known yet (ssh-ed25519 SHA256:abc). Check "
                                  "that fingerprint with the server's administrator, then run again with "
                                  "--accept-new-host-key to trust it."),
    "openssh host key": lambda tmp_path: ("The host key of h could not be verified. Connect once with "
                                          "--accept-new-host-key (after checking its fingerprint), "
                                          "or fix known_hosts."),
    "login": lambda tmp_path: ("Wrong user or password for https://h/x: the server refused the login (HTTP 401). "
                               "Check them (labferry sites add … --ask-secret stores the password in the keyring)."),
    "tls": lambda tmp_path: ("The TLS certificate of h could not be verified (self-signed). If it comes from your "
                             "lab's own certificate authority, pass --ca-file with that CA; use --insecure only on a "
                             "network you trust."),
    "errno": lambda tmp_path: "Could not connect to 127.0.0.1:22 ([Errno None] Unable to connect to port 22).",
    "empty": lambda tmp_path: "The agent on dtn failed (). Check it.",
    "stall": lambda tmp_path: "h sent no data for longer than the stall timeout (--stall-timeout); Ferry will retry.",
}


@pytest.mark.parametrize("name", SENTENCES)
def test_no_flag_errno_or_empty_parentheses_reaches_the_window(name, tmp_path):
    said = for_window(SENTENCES[name](tmp_path))
    assert not re.search(r"--[a-z]", said), said
    assert "[Errno" not in said and "()" not in said and "same command" not in said, said
    assert said.endswith((".", ")")) and "  " not in said, said


def test_the_window_names_its_own_controls():
    clash = for_window("Use --sync (in the app: Skip unchanged files) to keep those that are unchanged, or "
                       "--overwrite (Replace them) to replace them.")
    assert "Skip unchanged files" in clash and "Replace them" in clash
    assert "press Retry" in for_window("Run the same command again to fetch what failed.")
    assert "choose Trust" in for_window("… administrator, then run again with --accept-new-host-key to trust it.")
    assert for_window("A plain sentence stays as it is.") == "A plain sentence stays as it is."


def test_an_http_address_is_http_whatever_backend_carries_it():
    assert protocol_name("https", "http://h/x") == "HTTP"
    assert protocol_name("https", "https://h/x") == "HTTPS"
    assert protocol_name("ssh", "sftp://h/x") == "SFTP"
    assert protocol_name("torrent", "/tmp/x.torrent") == "BitTorrent"


def test_a_space_before_a_file_name_extension_is_kept_and_one_before_a_full_stop_goes():
    said = for_window("ERR1 came from NCBI as its .sra file , and its .part file is kept .")
    assert said == "ERR1 came from NCBI as its .sra file , and its .part file is kept."
