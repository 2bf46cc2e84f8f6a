"""Real FTP servers on 127.0.0.1 for tests and benchmarks: a stock vsftpd (Debian's package) and ProFTPD.

Each serves an anonymous area (read-only, as the public archives are) and a password user (a Unix user of
the tests' own, whose login folder is ``user_root``; as root only). vsftpd checks the password through PAM;
ProFTPD through its own password file. Both run in the foreground with their config in a temporary folder.
The two conflict as Debian packages, so ProFTPD is unpacked from its .deb (``tests/system-deps.sh``).
"""

from __future__ import annotations

import os
import pwd
import subprocess
import time
from pathlib import Path

from .nginx import free_port, make_certificates, start_foreground, stop_process
from .sshd import users_locked

FTP_USER = "ferryftp"
FTP_PASSWORD = "ferry-ftp-password"


def ensure_ftp_user() -> str:
    """The Unix user the FTP tests log in as (vsftpd checks it through PAM); its own, so that the SSH tests'
    user keeps its home and sessions. Without root: the current user (password logins are then not tried)."""
    import getpass

    if os.geteuid() != 0:
        return getpass.getuser()
    with users_locked():
        try:
            pwd.getpwnam(FTP_USER)
        except KeyError:
            subprocess.run(["useradd", "--no-create-home", "--home-dir", "/", "--shell", "/bin/sh",
                            FTP_USER], check=True)
        subprocess.run(["chpasswd"], input=f"{FTP_USER}:{FTP_PASSWORD}", text=True, check=True)
    return FTP_USER

PROFTPD_ROOT = Path(os.environ.get("LABFERRY_PROFTPD_ROOT", "/opt/labferry-tests/proftpd"))


class _FtpServer:
    name = "ftp"

    def __init__(self, root: Path, *, max_per_ip: int = 0, tls: bool = False, listen: str = "127.0.0.1",
                 argv_prefix: tuple[str, ...] = (), idle_seconds: int = 300) -> None:
        """``listen`` and ``argv_prefix``: the benchmarks run the server on an emulated host (``ip netns exec``).
        ``idle_seconds``: a control connection with no command for this long is closed (vsftpd only)."""
        self.root = root
        self.idle_seconds = idle_seconds
        self.listen, self.argv_prefix = listen, argv_prefix
        self.anon = root / "anon"
        self.user_root = root / "user"
        self.max_per_ip = max_per_ip
        for folder in (self.root, self.anon, self.user_root):
            folder.mkdir(parents=True, exist_ok=True)
            os.chmod(folder, 0o755)
        self.user = ensure_ftp_user()
        self.password = FTP_PASSWORD
        if os.geteuid() == 0:
            os.chown(self.user_root, pwd.getpwnam(self.user).pw_uid, pwd.getpwnam(self.user).pw_gid)
        self.port = free_port()
        self.pasv = (free_port(), 0)
        self.proc: subprocess.Popen | None = None
        #: explicit FTPS (AUTH TLS) required for every login and data connection, with a certificate for
        #: 127.0.0.1 signed by the server's own CA (``ca_file``)
        self.certs = make_certificates(root / "tls") if tls else None

    @property
    def ca_file(self) -> str:
        assert self.certs, "this server was started without TLS"
        return str(self.certs["ca"])

    def url(self, path: str = "", *, user: bool = False, scheme: str | None = None) -> str:
        scheme = scheme or ("ftps" if self.certs else "ftp")
        login = f"{self.user}:{self.password}@" if user else ""
        return f"{scheme}://{login}{self.listen}:{self.port}/{path.lstrip('/')}"

    def absolute(self, path: Path) -> str:
        """The absolute path the password user's login sees for ``path`` (vsftpd: the real one, no chroot)."""
        return str(path)

    def give(self, path: Path) -> None:
        """Hand a file or folder under ``user_root`` to the FTP user (as root)."""
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{self.user}:", str(path)], check=True)

    def argv(self, conf: Path) -> list[str]:
        raise NotImplementedError

    def config(self) -> str:
        raise NotImplementedError

    def start(self):
        conf = self.root / f"{self.name}.conf"
        conf.write_text(self.config())
        if not self.argv_prefix:
            self.proc = start_foreground(self.argv(conf), self.port, self.name)
            return self
        # in another network namespace: its port cannot be polled from here
        self.proc = subprocess.Popen([*self.argv_prefix, *self.argv(conf)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        time.sleep(0.5)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} did not start: {self.proc.stderr.read().decode()}")
        return self

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None

    def restart(self, pause: float = 0.0) -> None:
        self.stop()
        time.sleep(pause)
        self.start()


class Vsftpd(_FtpServer):
    name = "vsftpd"

    def argv(self, conf: Path) -> list[str]:
        return ["/usr/sbin/vsftpd", str(conf)]

    def commands(self) -> list[str]:
        """Every command clients sent so far (vsftpd's protocol log), e.g. ``RETR big.bin``."""
        log = self.root / "vsftpd.log"
        if not log.exists():
            return []
        found = []
        for line in log.read_text(errors="replace").splitlines():
            if 'FTP command: Client "' in line:
                found.append(line.split('", "', 1)[-1].rstrip('"'))
        return found

    def config(self) -> str:
        Path("/var/run/vsftpd/empty").mkdir(parents=True, exist_ok=True)
        return f"""
listen=YES
listen_ipv6=NO
listen_address={self.listen}
listen_port={self.port}
background=NO
anonymous_enable=YES
anon_root={self.anon}
no_anon_password=YES
anon_upload_enable=NO
local_enable=YES
local_root={self.user_root}
write_enable=YES
local_umask=022
pam_service_name=vsftpd
pasv_enable=YES
pasv_address={self.listen}
max_clients=200
max_per_ip={self.max_per_ip}
idle_session_timeout={self.idle_seconds}
seccomp_sandbox=NO
secure_chroot_dir=/var/run/vsftpd/empty
xferlog_enable=YES
xferlog_std_format=NO
log_ftp_protocol=YES
vsftpd_log_file={self.root}/vsftpd.log
use_localtime=NO
{self._tls()}"""

    def _tls(self) -> str:
        if not self.certs:
            return ""
        # every login and data connection protected, anonymous ones too; data connections must resume the
        # control connection's TLS session (vsftpd's default, require_ssl_reuse)
        return f"""ssl_enable=YES
rsa_cert_file={self.certs['server']}
rsa_private_key_file={self.certs['server_key']}
allow_anon_ssl=YES
force_anon_logins_ssl=YES
force_anon_data_ssl=YES
force_local_logins_ssl=YES
force_local_data_ssl=YES
require_ssl_reuse=YES
ssl_ciphers=HIGH
"""


def proftpd_binary() -> str:
    """ProFTPD as installed, else as ``tests/system-deps.sh`` unpacked it (it conflicts with vsftpd); with
    mod_tls beside it (Debian's proftpd-mod-crypto)."""
    for root in (Path("/"), PROFTPD_ROOT):
        if os.access(root / "usr/sbin/proftpd", os.X_OK) and (root / "usr/lib/proftpd/mod_tls.so").exists():
            return str(root / "usr/sbin/proftpd")
    raise FileNotFoundError("proftpd")


def _crypted(password: str) -> str:
    out = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=password, text=True, capture_output=True,
                         check=True)
    return out.stdout.strip()


class Proftpd(_FtpServer):
    """ProFTPD (1.3.8, Debian's build): MLST/MLSD, SIZE, MDTM, REST STREAM, and HASH/XSHA256 from mod_digest.
    Its own password file holds the password user (same Unix uid) and ``ftp`` for the anonymous area."""

    name = "proftpd"

    def argv(self, conf: Path) -> list[str]:
        return [proftpd_binary(), "--nodaemon", "-q", "-c", str(conf)]

    def absolute(self, path: Path) -> str:
        """Logins are kept in their home (``DefaultRoot ~``): absolute paths start there."""
        return "/" + path.relative_to(self.user_root).as_posix()

    def commands(self) -> list[str]:
        """Every command clients sent so far (ProFTPD's ExtendedLog), e.g. ``RETR big.bin``."""
        log = self.root / "commands.log"
        return [line.strip() for line in log.read_text(errors="replace").splitlines()] if log.exists() else []

    def config(self) -> str:
        modules = Path(proftpd_binary()).parent.parent / "lib/proftpd"
        uid, gid = (pwd.getpwnam(self.user).pw_uid, pwd.getpwnam(self.user).pw_gid) if os.geteuid() == 0 \
            else (os.getuid(), os.getgid())
        nobody = pwd.getpwnam("nobody")
        crypted = _crypted(self.password)
        (self.root / "ftpd.passwd").write_text(
            f"{self.user}:{crypted}:{uid}:{gid}::{self.user_root}:/bin/sh\n"
            f"ftp:*:{nobody.pw_uid}:{nobody.pw_gid}::{self.anon}:/bin/false\n")
        (self.root / "ftpd.group").write_text(f"ferrytests:x:{gid}:\nnogroup:x:{nobody.pw_gid}:\n")
        for name in ("ftpd.passwd", "ftpd.group"):
            os.chmod(self.root / name, 0o600)  # ProFTPD refuses a world-readable password file
        run_as = "User nobody\nGroup nogroup" if os.geteuid() == 0 else ""
        low = self.pasv[0]
        return f"""
ServerType standalone
ServerName "Ferry tests"
DefaultServer on
DefaultAddress {self.listen}
SocketBindTight on
Port {self.port}
UseIPv6 off
{run_as}
PidFile {self.root}/proftpd.pid
ScoreboardFile {self.root}/proftpd.scoreboard
DelayTable none
WtmpLog off
UseReverseDNS off
AuthPAM off
AuthOrder mod_auth_file.c
AuthUserFile {self.root}/ftpd.passwd
AuthGroupFile {self.root}/ftpd.group
RequireValidShell off
DefaultRoot ~
Umask 022
AllowOverwrite on
AllowStoreRestart on
AllowRetrieveRestart on
MaxInstances 200
{f"MaxClientsPerHost {self.max_per_ip}" if self.max_per_ip else ""}
PassivePorts {low} {low + 200}
ModulePath {modules}
LoadModule mod_digest.c
DigestEngine on
DigestAlgorithms sha256 md5 sha1 crc32
LogFormat commands "%m %J"
ExtendedLog {self.root}/commands.log ALL commands
SystemLog {self.root}/proftpd.log
TransferLog {self.root}/xferlog
{self._tls()}<Anonymous {self.anon}>
    User ftp
    Group nogroup
    UserAlias anonymous ftp
    RequireValidShell off
    <Limit WRITE>
        DenyAll
    </Limit>
</Anonymous>
"""

    def _tls(self) -> str:
        if not self.certs:
            return ""
        # TLSRequired on: control and data, anonymous logins too; data connections must resume the control
        # connection's TLS session (ProFTPD's default)
        return f"""LoadModule mod_tls.c
TLSEngine on
TLSRequired on
TLSProtocol TLSv1.2 TLSv1.3
TLSRSACertificateFile {self.certs['server']}
TLSRSACertificateKeyFile {self.certs['server_key']}
TLSLog {self.root}/tls.log
"""
