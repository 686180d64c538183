#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium: the web UI's browser test
# drives it with Playwright (whose own browser download is not used). Installs it
# with apt-get (Debian/Ubuntu, as root) when missing, and says clearly what to do
# otherwise. A second run does nothing.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

[ -x "$CHROMIUM" ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "error: $CHROMIUM is missing and cannot be installed automatically here." >&2
  echo "       Install it yourself (for example: sudo apt-get install chromium) and re-run make." >&2
  exit 1
fi
echo ">> Chromium is missing: installing chromium with apt-get"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
if [ ! -x "$CHROMIUM" ]; then
  echo "error: apt-get installed chromium but $CHROMIUM is still missing" >&2
  exit 1
fi
