#!/usr/bin/env bash
# Reliability tests (tests/reliability): Debian's libfiu (fiu-run, fiu-ctrl and its POSIX
# preload library) injects EIO into a real `stowage serve`. The tests also mount a small
# tmpfs (root, as in CI) for the disk-full cases; that needs no package.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v fiu-run >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends fiu-utils >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends fiu-utils; }
fi

# schemathesis: the bounded fuzz run of tests/reliability/test_fuzz_openapi.py.
if ! .venv/bin/python -c 'import importlib.metadata as m; assert m.version("schemathesis") == "4.32.5"' 2>/dev/null; then
  flock /tmp/stowage-pip.lock .venv/bin/pip install --quiet --no-compile "schemathesis==4.32.5"
fi
