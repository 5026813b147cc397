#!/usr/bin/env bash
# gcp-storage-emulator, the GCS server of the GCS provider tests (tests/servers/fx_gcs.py).
# Its dependencies do not clash with the project's, so it goes into the project venv.
set -euo pipefail
cd "$(dirname "$0")/../.."

GCS_EMULATOR_VERSION="2026.7.19"

installed="$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("gcp-storage-emulator"))' 2>/dev/null || true)"
if [ "$installed" != "$GCS_EMULATOR_VERSION" ]; then
  flock /tmp/stowage-pip.lock .venv/bin/pip install --quiet --no-compile "gcp-storage-emulator==$GCS_EMULATOR_VERSION"
fi
