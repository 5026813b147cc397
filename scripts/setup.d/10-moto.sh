#!/usr/bin/env bash
# moto's S3 server (moto_server) for the S3 provider tests, into the project venv.
# aiobotocore is named too so that pip keeps a botocore both packages accept.
set -euo pipefail
cd "$(dirname "$0")/../.."
MOTO_SPEC='moto[server]==5.2.5'
if .venv/bin/python - <<'PY' 2>/dev/null; then
import importlib.metadata as md
import flask, aiobotocore  # noqa: F401  (moto_server needs flask)
assert md.version("moto") == "5.2.5"
PY
  exit 0
fi
flock /tmp/stowage-pip.lock .venv/bin/pip install --quiet --no-compile "$MOTO_SPEC" "aiobotocore>=2.19,<4"
