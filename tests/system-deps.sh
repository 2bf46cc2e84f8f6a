#!/bin/sh
# The programs the integration tests run for real. As root on Debian/Ubuntu, install
# what is missing; otherwise say what to install. A missing server fails the suite:
# it is never skipped.
set -eu
need=""
command -v nginx   >/dev/null 2>&1 || need="$need nginx"
command -v openssl >/dev/null 2>&1 || need="$need openssl"
command -v ssh     >/dev/null 2>&1 || need="$need openssh-client"
[ -x /usr/sbin/sshd ] || command -v sshd >/dev/null 2>&1 || need="$need openssh-server"
[ -x /usr/sbin/apache2 ] || command -v apache2 >/dev/null 2>&1 || need="$need apache2"
[ -x /usr/sbin/vsftpd ] || command -v vsftpd >/dev/null 2>&1 || need="$need vsftpd"
[ -x /usr/sbin/lighttpd ] || command -v lighttpd >/dev/null 2>&1 || need="$need lighttpd"
command -v pdftotext >/dev/null 2>&1 || need="$need poppler-utils"
# a real OS keyring for the site-secret tests: gnome-keyring's Secret Service on a private session bus
command -v gnome-keyring-daemon >/dev/null 2>&1 || need="$need gnome-keyring"
command -v dbus-daemon >/dev/null 2>&1 || need="$need dbus-daemon"
command -v dbus-send >/dev/null 2>&1 || need="$need dbus-bin"
# the window is tested offscreen and, for drags and the Files tab, on a real X server
command -v xvfb-run >/dev/null 2>&1 || need="$need xvfb xauth"
command -v xdotool >/dev/null 2>&1 || need="$need xdotool"  # real mouse drags under Xvfb (tests/gui/x11_drag.py)
# labferry completion: the fish and zsh scripts are run by the shells themselves (tests/unit/test_cli_shell.py)
command -v fish >/dev/null 2>&1 || need="$need fish"
command -v zsh >/dev/null 2>&1 || need="$need zsh"
# a csh login shell on the test sshd, as HPC accounts have (tests/hostile/test_login_shells.py)
command -v tcsh >/dev/null 2>&1 || need="$need tcsh"
[ -x /usr/lib/openssh/sftp-server ] || need="$need openssh-sftp-server"
# bsdtar: the tar of macOS and Windows, which unpacks folder downloads there (tests/unit/test_untar.py)
command -v bsdtar >/dev/null 2>&1 || need="$need libarchive-tools"
command -v strace >/dev/null 2>&1 || need="$need strace"  # counts an unpack's system calls a member
# sra-tools: real .sra files made (latf-load, kar) and converted (fasterq-dump) (tests/integration/test_ncbi_source.py)
command -v fasterq-dump >/dev/null 2>&1 && command -v latf-load >/dev/null 2>&1 || need="$need sra-toolkit"
# an institution's web proxy (HTTPS_PROXY, --proxy: tests/integration/test_proxy_netrc.py)
command -v tinyproxy >/dev/null 2>&1 || need="$need tinyproxy"
command -v globus-url-copy >/dev/null 2>&1 || need="$need globus-gass-copy-progs"
# --compress: the servers' zstd, and Illumina reads simulated over a generated reference (art_illumina)
command -v zstd >/dev/null 2>&1 || need="$need zstd"
command -v art_illumina >/dev/null 2>&1 || need="$need art-nextgen-simulation-tools"
# names on a real FAT file system (case-insensitive, refusing what Windows refuses): fusefat on a mkfs.fat image
command -v fusefat >/dev/null 2>&1 || need="$need fusefat"
command -v mkfs.fat >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.fat ] || need="$need dosfstools"
command -v fusermount >/dev/null 2>&1 || command -v fusermount3 >/dev/null 2>&1 || need="$need fuse3"
# GridFTP over UDT: gsiftp:// only, so the tests make GSI credentials (grid-proxy-init) and need the UDT driver
command -v grid-proxy-init >/dev/null 2>&1 || need="$need globus-proxy-utils"
ls /usr/lib/*/libglobus_xio_udt_driver.so* >/dev/null 2>&1 || need="$need libglobus-xio-udt-driver"
[ -x /usr/sbin/globus-gridftp-server ] || command -v globus-gridftp-server >/dev/null 2>&1 \
    || need="$need globus-gridftp-server-progs"
# labferry pack/unpack under mpirun: Debian's Open MPI, which mpi4py (test extra) runs on (tests/integration/test_archive_mpi.py)
command -v mpirun >/dev/null 2>&1 || need="$need openmpi-bin"
ls /usr/lib/*/libmpi.so >/dev/null 2>&1 || need="$need libopenmpi-dev"
# copy --cluster slurm: a real Slurm cluster of munged, slurmctld and three slurmd (tests/servers/slurm.py)
[ -x /usr/sbin/slurmctld ] || command -v slurmctld >/dev/null 2>&1 || need="$need slurmctld"
[ -x /usr/sbin/slurmd ] || command -v slurmd >/dev/null 2>&1 || need="$need slurmd"
command -v sbatch >/dev/null 2>&1 || need="$need slurm-client"
[ -x /usr/sbin/munged ] || command -v munged >/dev/null 2>&1 || need="$need munge"
# ProFTPD and vsftpd conflict as Debian packages: vsftpd is installed, ProFTPD is unpacked into its own folder
# (tests/servers/ftp.py looks there) with the libraries it links to installed beside it.
PROFTPD_ROOT="${LABFERRY_PROFTPD_ROOT:-/opt/labferry-tests/proftpd}"
PROFTPD_LIBS="libhiredis0.14 libmemcached11 libmemcachedutil2 libpcre2-posix3 libacl1 libcap2 libssl3"
# proftpd-mod-crypto holds mod_tls (explicit FTPS), which proftpd-core lacks
unpack_proftpd=""
if ! [ -x /usr/sbin/proftpd ] || ! [ -f /usr/lib/proftpd/mod_tls.so ]; then
    if ! [ -x "$PROFTPD_ROOT/usr/sbin/proftpd" ] || ! [ -f "$PROFTPD_ROOT/usr/lib/proftpd/mod_tls.so" ]; then
        unpack_proftpd=yes
    fi
fi
[ -z "$need" ] && [ -z "$unpack_proftpd" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    if [ -n "$need" ]; then
        echo "installing:$need"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
    fi
    if [ -n "$unpack_proftpd" ]; then
        echo "unpacking proftpd-core and proftpd-mod-crypto into $PROFTPD_ROOT"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PROFTPD_LIBS >/dev/null
        work=$(mktemp -d)
        chmod 755 "$work"
        (cd "$work" && apt-get download -qq proftpd-core proftpd-mod-crypto >/dev/null 2>&1)
        mkdir -p "$PROFTPD_ROOT"
        for deb in "$work"/proftpd-core_*.deb "$work"/proftpd-mod-crypto_*.deb; do
            dpkg-deb -x "$deb" "$PROFTPD_ROOT"
        done
        rm -rf "$work"
    fi
else
    [ -n "$need" ] && echo "The tests need:$need. Install them (Debian/Ubuntu: sudo apt-get install$need)." >&2
    [ -n "$unpack_proftpd" ] && echo "The tests need ProFTPD: run this script as root once (it unpacks proftpd-core \
and proftpd-mod-crypto into $PROFTPD_ROOT), or set LABFERRY_PROFTPD_ROOT to a folder holding usr/sbin/proftpd." >&2
    exit 1
fi
