#!/usr/bin/env bash
# The Dropbox provider tests run a local HTTPS fake (tests/servers/dropbox_fake.py): it needs
# only aiohttp (a project dependency) and cryptography for its self-signed certificate.
# The dropbox SDK itself comes with the "dropbox" extra (scripts/bootstrap).
set -euo pipefail
cd "$(dirname "$0")/../.."

CRYPTOGRAPHY_VERSION="50.0.2"

installed="$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("cryptography"))' 2>/dev/null || true)"
if [ -z "$installed" ]; then
  flock /tmp/stowage-pip.lock .venv/bin/pip install --quiet --no-compile "cryptography==$CRYPTOGRAPHY_VERSION"
fi
