#!/usr/bin/env bash
# Azurite, the Azure Blob server of the Azure provider tests (tests/servers/fx_azure.py).
# Installed with npm from the pinned tests/servers/azurite/package*.json into
# .test-servers/azurite (not committed); reinstalled only when the lock file changes.
set -euo pipefail
cd "$(dirname "$0")/../.."

src="tests/servers/azurite"
dest=".test-servers/azurite"
stamp="$dest/.installed-$(sha256sum "$src/package-lock.json" | cut -c1-16)"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm; }
fi

if [ ! -f "$stamp" ] || [ ! -f "$dest/node_modules/azurite/dist/src/blob/main.js" ]; then
  mkdir -p "$dest"
  rm -f "$dest"/.installed-*
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
  touch "$stamp"
fi
