"""The last word on a failed job: once retries are spent, no sentence still promises another try."""

from backends.core.errors import RemoteChanged, Transient


def test_given_up_drops_the_promise_and_keeps_the_kind():
    for message in ("The connection to h:1 broke (ServerDisconnectedError); Ferry will retry.",
                    "The SSH stream reading /x stopped; Ferry will retry that range.",
                    "The server sent bytes from 5 when asked for 0; retrying that range."):
        final = Transient(message).given_up(6)
        assert "retry" not in str(final).lower().replace("tried 6 times", "")
        assert "Ferry tried 6 times and stopped" in str(final)
        assert isinstance(final, Transient) and final.kind == "transient"
    changed = RemoteChanged("The file changed on the server; starting again.").given_up(2)
    assert isinstance(changed, RemoteChanged) and str(changed).startswith("The file changed on the server; starting")
