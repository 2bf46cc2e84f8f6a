"""The error hierarchy every backend raises.

Each error carries a sentence for the user (what happened and what to do), so the
CLI and the GUI can show it as is, and a class the engine uses to decide between
retrying and failing in one place (``retryable``).
"""

from __future__ import annotations

import re


class TransferError(Exception):
    """Base of every error a backend reports; ``str(err)`` is the user's sentence."""

    retryable = False
    #: short machine-readable kind, stored in history and reports
    kind = "error"
    #: CLI exit status for this kind of failure
    exit_status = 1
    #: the job waits, paused with this sentence, for the user to fix something outside it (a relay's full spool)
    #: instead of failing; resuming it tries again
    pauses = False

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail  # technical detail for logs, never needed to act

    def given_up(self, attempts: int) -> TransferError:
        """The same error as the last word once retries are spent: it no longer promises another try."""
        text = _WILL_RETRY.sub("", self.message).rstrip(" ;,.")
        tries = "once" if attempts == 1 else f"{attempts} times"
        done = type(self)(f"{text}. Ferry tried {tries} and stopped; check the server and the network, "
                          "then run the same command again to resume.", detail=self.detail)
        done.__cause__ = self
        return done


_WILL_RETRY = re.compile(r"[;,.]?\s*(Ferry will retry|retrying)( that range)?\.?", re.IGNORECASE)


class BadRequest(TransferError):
    """The user's input cannot work as given (malformed URL, unknown scheme)."""

    kind = "bad-request"
    exit_status = 2


class WebPage(BadRequest):
    """The server sent an HTML page where a file was expected (a login form, an error page, a folder)."""

    kind = "web-page"

    def __init__(self, message: str, *, url: str = "", **kw) -> None:
        super().__init__(message, **kw)
        self.url = url  # where the page was (after redirects): a directory listing there is a folder


class BadAddress(BadRequest):
    """The address leads nowhere usable however often it is tried (a redirect loop)."""

    kind = "bad-address"


class LoginPrints(TransferError):
    """An SSH login whose shell start-up files print text before every command, where Ferry cannot work around it
    (the server's SFTP subsystem starts through that shell): the account's to fix, never retried."""

    kind = "login-prints"
    exit_status = 3


class NotFound(TransferError):
    kind = "not-found"
    exit_status = 3


class PermissionDenied(TransferError):
    kind = "permission-denied"
    exit_status = 3


class AuthError(TransferError):
    kind = "auth"
    exit_status = 3


class HostKeyError(TransferError):
    kind = "host-key"
    exit_status = 3


class TlsError(TransferError):
    kind = "tls"
    exit_status = 3


class Unreachable(TransferError):
    """Name lookup failed or the server refused or never answered."""

    kind = "unreachable"
    exit_status = 4


class Transient(TransferError):
    """A fault that may pass: connection reset, timeout, 5xx, server restarting."""

    retryable = True
    kind = "transient"
    exit_status = 4


class RemoteChanged(Transient):
    """The remote file changed during the transfer; start again from scratch."""

    kind = "remote-changed"


class BadAnswer(TransferError):
    """The server's answer can never become the file, however often it is asked: more bytes than it announced, a
    body that inflates beyond any bound, a header block or line beyond any sane size, a redirect to another
    scheme, a name that cannot be a name. One try, one sentence, never retried: retries are for the network."""

    kind = "bad-answer"
    exit_status = 3


class LocalError(TransferError):
    """The destination side: missing folder, read-only, existing file."""

    kind = "local"
    exit_status = 5


class PartTaken(LocalError):
    """Another upload holds the part file of this name on the server (``ssh.claim``, ``ftp.claim``)."""

    kind = "part-taken"


class NoSpace(LocalError):
    kind = "no-space"


class LinkInDest(LocalError):
    """A link where Ferry would write below DEST: never followed, never replaced in silence."""

    kind = "link"


class Corrupt(TransferError):
    """The data arrived but does not match its expected checksum or size."""

    kind = "corrupt"
    exit_status = 6


class Unavailable(TransferError):
    """The backend cannot run on this machine (a tool or library is missing)."""

    kind = "unavailable"
    exit_status = 2


def certificate_error(host: str | None, text: str) -> TlsError:
    """A server certificate that failed verification, in one sentence that says what to do: the wrong name, out
    of its dates, or from an authority this computer does not trust (``text``: OpenSSL's verify message)."""
    low = text.lower()
    if "hostname" in low or "ip address mismatch" in low or "doesn't match" in low:
        return TlsError(f"The TLS certificate of {host} is not valid for that name ({text}). Check the address; "
                        "if the server really is the one you expect, ask its owner to fix the certificate.")
    if "expired" in low or "not yet valid" in low:
        return TlsError(f"The TLS certificate of {host} is out of its validity dates ({text}). Ask the server's "
                        "owner to renew it, and check that this computer's clock is right.")
    return TlsError(f"The TLS certificate of {host} could not be verified ({text}). If it comes from your lab's own "
                    "certificate authority, pass --ca-file with that CA; use --insecure only on a network you trust.")
