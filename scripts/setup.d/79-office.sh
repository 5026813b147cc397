#!/usr/bin/env bash
# LibreOffice for Office and text documents (stowage/processing/office*.py,
# docs/transformations.md): Debian's headless packages and python3-uno, which the warm
# converters (office_driver.py, run by Debian's /usr/bin/python3) talk to soffice with.
# bubblewrap confines a converter to /usr and its job folder; util-linux gives unshare and
# prlimit (the sandbox, processing/sandbox.py).
set -euo pipefail

PACKAGES=(libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui python3-uno
  bubblewrap)
missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi
command -v unshare >/dev/null 2>&1 && command -v prlimit >/dev/null 2>&1 \
  || apt-get install -y -qq util-linux >/dev/null
