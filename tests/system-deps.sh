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
command -v pdftotext >/dev/null 2>&1 || need="$need poppler-utils"
command -v globus-url-copy >/dev/null 2>&1 || need="$need globus-gass-copy-progs"
[ -x /usr/sbin/globus-gridftp-server ] || command -v globus-gridftp-server >/dev/null 2>&1 \
    || need="$need globus-gridftp-server-progs"
[ -z "$need" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$need"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
else
    echo "The tests need:$need. Install them (Debian/Ubuntu: sudo apt-get install$need) and run make test again." >&2
    exit 1
fi
