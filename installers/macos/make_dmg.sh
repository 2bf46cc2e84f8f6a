#!/bin/sh
# Ferry for macOS: dist/Ferry.app (from `pyinstaller --noconfirm installers/labferry.spec`) ad-hoc signed and put
# in a disk image beside a link to /Applications, as Mac users expect to install an app.
#
#   sh installers/macos/make_dmg.sh            -> dist/Ferry-VERSION-macos-ARCH.dmg
#
# Ad-hoc signing (`codesign -s -`) is what Apple silicon requires of every binary it runs; Gatekeeper still
# warns on a downloaded copy until a lab with a Developer ID signs and notarizes it (docs/installers.md).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
app="$here/dist/Ferry.app"
[ -d "$app" ] || { echo "no $app: build it first with pyinstaller --noconfirm installers/labferry.spec" >&2; exit 2; }
version=$(cd "$here" && python3 -c 'from app import __version__; print(__version__)')
arch=$(uname -m)
codesign --force --deep --sign - "$app"
codesign --verify --deep --strict "$app"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -R "$app" "$stage/"
ln -s /Applications "$stage/Applications"
out="$here/dist/Ferry-$version-macos-$arch.dmg"
rm -f "$out"
hdiutil create -volname "Ferry $version" -srcfolder "$stage" -ov -format UDZO "$out"
hdiutil verify "$out"
echo "$out"
