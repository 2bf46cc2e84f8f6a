"""Site profiles: a named collaborator's server, so nobody types ``sftp://jdoe@dtn4.lab…`` twice.

The profile (protocol, host, port, user, default remote folder, preferred streams, key
file, known_hosts) is in SQLite; its secret (password or key passphrase), if any, only
in the OS keyring under service ``labferry``. ``site:NAME/path`` anywhere a URL is
accepted expands to the profile's URL, with the profile's options.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from urllib.parse import quote

from backends.core.errors import AuthError, BadRequest, NotFound
from backends.core.options import check_backend_options
from backends.core.registry import Registry
from backends.core.registry import registry as default_registry
from backends.core.urls import reads_as_option

SERVICE = "labferry"
PROTOCOLS = ("sftp", "scp", "https", "http", "ftp", "ftps", "gsiftp", "sshftp")
#: protocols whose login may take a password (GridFTP's gsiftp uses certificates, sshftp SSH keys)
PASSWORD_PROTOCOLS = ("sftp", "scp", "https", "http", "ftp", "ftps")
#: protocols whose relative paths start in the login folder (the others' start at the server's root)
LOGIN_FOLDER_PROTOCOLS = ("sftp", "scp", "ftp", "ftps")
#: a site's name as people write it ("Collaborator (Smith lab)"): up to 64 characters, no slash, backslash or
#: colon (``site:NAME/path`` must stay readable), no control characters, no space at either end
_NAME = re.compile(r"(?=[^\s])[^/\\:\x00-\x1f\x7f]{1,64}(?<=[^\s])")


@dataclass
class Site:
    name: str
    protocol: str
    host: str
    port: int | None = None
    user: str | None = None
    remote_folder: str = ""
    streams: str = "auto"
    key_file: str | None = None
    options: dict = field(default_factory=dict)  # known_hosts, max_handshakes, ca_file…

    def validate(self) -> Site:
        if not _NAME.fullmatch(self.name):
            raise BadRequest(f"'{self.name}' cannot be a site's name: give up to 64 characters without '/', '\\' "
                             "or ':'.")
        if self.protocol not in PROTOCOLS:
            raise BadRequest(f"Sites can use {', '.join(PROTOCOLS)}; '{self.protocol}' is not one of them.")
        if not self.host or any(c in self.host for c in "/@:") or reads_as_option(self.host):
            raise BadRequest(f"'{self.host}' is not a host name. Give just the host, such as dtn.example.org.")
        if self.user and reads_as_option(self.user):
            raise BadRequest(f"'{self.user}' is not a user name: it begins with '-' or holds a space or a control "
                             "character.")
        if self.streams != "auto" and not (self.streams.isdigit() and 1 <= int(self.streams) <= 64):
            raise BadRequest("A site's streams must be auto or a number from 1 to 64.")
        return self

    def home(self) -> str:
        """Where a folder pane opens, as the panes hold a server path: the default folder, absolute
        (``/data/collab``) or below the login folder (``~/collab``); without one, the login folder (``~``) on
        servers that have one (SSH, FTP), as FileZilla opens, and the root elsewhere (web, GridFTP)."""
        folder = self.remote_folder.strip()
        if folder.startswith("/"):
            return "/" + folder.strip("/")
        folder = folder.removeprefix("~").strip("/")
        if self.protocol in LOGIN_FOLDER_PROTOCOLS:
            return f"~/{folder}" if folder else "~"
        return "/" + folder

    def anchor(self) -> str:
        """What ``site:NAME/path`` is below: the default folder; without one, the server's root on SSH (so
        ``site:NAME/data/x`` is ``/data/x``, as it always was) and FTP's login folder (RFC 1738's ftp://host/x)."""
        if not self.remote_folder.strip() and self.protocol not in ("ftp", "ftps"):
            return "/"
        return self.home()

    def url(self, path: str = "", secret: str | None = None) -> str:
        """``path`` below the anchor ("" the anchor itself, a trailing "/" kept) as this site's URL."""
        rel = path.strip("/")
        where = self.anchor().rstrip("/") + "/" + rel if rel else self.anchor()
        return self.url_of(where + ("/" if path.endswith("/") and not where.endswith("/") else ""), secret)

    def url_of(self, where: str, secret: str | None = None) -> str:
        """A server path in the panes' form — absolute (``/x``) or below the login folder (``~``, ``~/x``) — as
        this site's URL, whatever the default folder."""
        if where.startswith("~"):
            rel = where[1:].lstrip("/")
            # SSH URLs say the login folder with /~/; FTP's paths start there (RFC 1738)
            full = "/~/" + rel if self.protocol in ("sftp", "scp") else "/" + rel
        else:
            full = "/" + where.lstrip("/")
            if self.protocol in ("ftp", "ftps"):
                full = "/" + full  # RFC 1738: ftp://host//x is the absolute /x
        auth = ""
        if self.user:
            auth = quote(self.user, safe="") + (":" + quote(secret, safe="") if secret else "") + "@"
        port = f":{self.port}" if self.port else ""
        return f"{self.protocol}://{auth}{self.host}{port}{quote(full, safe='/~')}"

    def backend_options(self) -> dict:
        extra = {k: v for k, v in self.options.items() if v is not None}
        if self.key_file:
            extra["identity"] = self.key_file
        return extra

    def to_row(self) -> dict:
        return {"name": self.name, "protocol": self.protocol, "host": self.host, "port": self.port,
                "user": self.user, "remote_folder": self.remote_folder, "streams": self.streams,
                "key_file": self.key_file, "options": self.options}

    @classmethod
    def from_row(cls, row: dict) -> Site:
        return cls(row["name"], row["protocol"], row["host"], row.get("port"), row.get("user"),
                   row.get("remote_folder") or "", row.get("streams") or "auto", row.get("key_file"),
                   dict(row.get("options") or {}))


#: seconds a keyring has to answer (a desktop keyring answers in milliseconds, or shows its unlock dialog);
#: ``LABFERRY_KEYRING_WAIT`` sets another


def _keyring_wait() -> float:
    import os

    try:
        return max(0.1, float(os.environ.get("LABFERRY_KEYRING_WAIT", "60")))
    except ValueError:
        return 60.0


class Secrets:
    """Site secrets in the OS keyring; nothing else in Ferry ever stores one."""

    def _keyring(self):
        import keyring

        return keyring

    def get(self, site: str) -> str | None:
        """The site's secret, asked of the keyring in a thread of its own: a keyring that never answers (a
        Secret Service whose session bus is gone, a locked Keychain behind a dialog nobody sees) ends in a
        sentence after ``LABFERRY_KEYRING_WAIT`` seconds (60) instead of holding the job, or the window, for ever."""
        answer: list = []

        def ask() -> None:
            try:
                answer.append(self._keyring().get_password(SERVICE, f"site:{site}"))
            except Exception as exc:  # noqa: BLE001  (any backend's failure is said in the sentence below)
                answer.append(exc)

        asking = threading.Thread(target=ask, name="ferry-keyring", daemon=True)
        asking.start()
        wait = _keyring_wait()
        asking.join(wait)
        if not answer:
            raise AuthError(f"The OS keyring did not answer within {wait:.0f} s for site {site}'s secret. "
                            "Unlock the keyring (or log in to the desktop session) and try again.")
        if isinstance(answer[0], Exception):
            raise AuthError(f"Could not read the secret of site {site} from the OS keyring ({answer[0]}).")
        return answer[0]

    def set(self, site: str, secret: str) -> None:
        try:
            self._keyring().set_password(SERVICE, f"site:{site}", secret)
        except Exception as exc:
            raise AuthError(f"Could not store the secret in the OS keyring ({exc}). Without a keyring, use an SSH "
                            "key with ssh-agent instead of a password.") from None

    def delete(self, site: str) -> None:
        try:
            self._keyring().delete_password(SERVICE, f"site:{site}")
        except Exception:
            pass  # nothing stored is fine


class SiteBook:
    """Sites over a store; the engine thread and the CLI each use their own store connection."""

    def __init__(self, store, secrets: Secrets | None = None) -> None:
        self.store, self.secrets = store, secrets or Secrets()

    def save(self, site: Site, secret: str | None = None) -> Site:
        site.validate()
        self.store.sites.save(site.to_row())
        if secret:
            self.secrets.set(site.name, secret)
        return site

    def get(self, name: str) -> Site:
        row = self.store.sites.get(name)
        if row is None:
            known = ", ".join(s["name"] for s in self.store.sites.all()) or "none yet"
            raise BadRequest(f"There is no site called '{name}' (known: {known}). Add it with labferry sites add.")
        return Site.from_row(row)

    def all(self) -> list[Site]:
        return [Site.from_row(r) for r in self.store.sites.all()]

    def remove(self, name: str) -> None:
        if not self.store.sites.remove(name):
            raise NotFound(f"There is no site called '{name}'.")
        self.secrets.delete(name)

    def expand(self, location: str) -> tuple[str, Site | None]:
        """``site:NAME/path`` → (URL with the secret, the site); anything else unchanged. The path is below the
        site's default folder; ``site:NAME//abs`` names the absolute ``/abs`` and ``site:NAME/~/x`` a path below
        the login folder (what the folder panes reach above the default folder)."""
        if not location.startswith("site:"):
            return location, None
        name, _, path = location[5:].partition("/")
        site = self.get(name)
        secret = self.secrets.get(name) if site.protocol in PASSWORD_PROTOCOLS and site.user else None
        if path.startswith("/") or path == "~" or path.startswith("~/"):
            return site.url_of(path, secret), site
        return site.url(path if path or not location.endswith("/") else "/", secret), site


def protocol_name(backend: str, address: str = "") -> str:
    """The protocol as the user typed it, not the backend that carries it: an http:// address is HTTP, though the
    https backend moves it."""
    scheme = address.split("://", 1)[0].lower() if "://" in address else ""
    names = {"http": "HTTP", "https": "HTTPS", "sftp": "SFTP", "scp": "SCP", "ftp": "FTP", "ftps": "FTPS",
             "gsiftp": "GridFTP", "sshftp": "GridFTP over SSH", "magnet": "BitTorrent"}
    if scheme in names:
        return names[scheme]
    return {"https": "HTTPS", "ssh": "SSH", "ftp": "FTP", "gridftp": "GridFTP", "torrent": "BitTorrent",
            "relay": "Relay"}.get(backend, backend)


#: a site's protocol → the schemes its transfers' addresses have
SCHEMES_OF = {"sftp": ("sftp", "scp"), "scp": ("sftp", "scp"), "https": ("https",), "http": ("http",),
              "ftp": ("ftp", "ftps"), "ftps": ("ftp", "ftps"), "gsiftp": ("gsiftp",), "sshftp": ("sshftp",)}


def site_of(address: str, sites: list[dict]) -> str | None:
    """The name of the saved site an address belongs to, matched by host, protocol and port (a web server and
    an SSH login on one host are two sites, never one matched by IP); None when no profile matches. ``sites``:
    the store's site rows."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(address)
        scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
    except ValueError:
        return None
    for site in sites:
        if site["host"] == host and scheme in SCHEMES_OF.get(site["protocol"], ()) \
                and (not site.get("port") or not port or site["port"] == port):
            return site["name"]
    return None


def _site_backend(protocol: str, registry: Registry | None):
    """The backend a site of ``protocol`` reaches its host with."""
    return (registry or default_registry).for_url(f"{protocol}://host/")


def site_option_spec(protocol: str, registry: Registry | None = None) -> tuple[str, type | None]:
    """The backend a site of ``protocol`` reaches its host with, and that backend's declared options (the site
    dialog's protocol fields come from them, as ``labferry copy``'s flags do)."""
    backend = _site_backend(protocol, registry)
    return backend.name, getattr(backend, "options_type", None)


def checked_site_options(protocol: str, values: dict, registry: Registry | None = None) -> dict:
    """A site's protocol options as the front door will take them: unknown or ill-typed ones refused here, with
    the same sentence a transfer would get (``ca_file`` is every TLS protocol's, not one backend's)."""
    backend = _site_backend(protocol, registry)
    own = {k: v for k, v in values.items() if k != "ca_file"}
    checked = check_backend_options(backend, own)
    return checked | ({"ca_file": values["ca_file"]} if values.get("ca_file") else {})
