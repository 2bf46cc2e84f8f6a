#!/bin/sh
# Put Ferry's one-folder bundle into the desktop menu (Linux, per user): a .desktop entry and the icon.
#   sh installers/install-desktop.sh [BUNDLE_FOLDER]     (default: dist/labferry next to this script's parent)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:-$here/dist/labferry}" && pwd)
apps="${XDG_DATA_HOME:-$HOME/.local/share}/applications"
icons="${XDG_DATA_HOME:-$HOME/.local/share}/icons/hicolor/scalable/apps"
mkdir -p "$apps" "$icons"
cp "$here/resources/ferry.svg" "$icons/labferry.svg"
sed -e "s|^Exec=.*|Exec=\"$bundle/labferry\" gui %U|" "$here/resources/labferry.desktop" > "$apps/labferry.desktop"
# the desktop's MIME cache, and Ferry as the handler of magnet: links (a browser asks the desktop which app)
if command -v update-desktop-database >/dev/null 2>&1; then update-desktop-database "$apps" || true; fi
if command -v xdg-mime >/dev/null 2>&1; then xdg-mime default labferry.desktop x-scheme-handler/magnet || true; fi
echo "Ferry is in the applications menu ($apps/labferry.desktop)."
