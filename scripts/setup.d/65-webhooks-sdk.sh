#!/usr/bin/env bash
# The official SDKs' webhook verification functions, used by tests/webhooks to check
# Stowage's signatures: filestack-python (into the venv) and filestack-js (npm, from the
# pinned tests/webhooks/js/package*.json into .test-servers/webhooks-js, not committed).
# Reinstalled only when a pin or the lock file changes.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY_SPEC='filestack-python==4.0.0'
if ! .venv/bin/python - <<'PY' 2>/dev/null; then
import importlib.metadata as md
from filestack.helpers import verify_webhook_signature  # noqa: F401
assert md.version("filestack-python") == "4.0.0"
PY
  flock /tmp/stowage-pip.lock .venv/bin/pip install --quiet "$PY_SPEC"
fi

src="tests/webhooks/js"
dest=".test-servers/webhooks-js"
stamp="$dest/.installed-$(sha256sum "$src/package-lock.json" | cut -c1-16)"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm; }
fi

if [ ! -f "$stamp" ] || [ ! -f "$dest/node_modules/filestack-js/package.json" ]; then
  mkdir -p "$dest"
  rm -f "$dest"/.installed-*
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
  touch "$stamp"
fi
