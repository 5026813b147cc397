#!/usr/bin/env bash
# OpenStack Swift all-in-one for the Swift/Rackspace and S3-on-Swift tests.
# Swift runs on eventlet and pins its own stack, so it gets its own venv
# under .test-servers/ instead of sharing the project's .venv.
set -euo pipefail
cd "$(dirname "$0")/../.."

SWIFT_VERSION="2.38.3"
venv=".test-servers/swift-venv"
stamp="$venv/.installed-swift-$SWIFT_VERSION"

if ! command -v memcached >/dev/null 2>&1 && [ ! -x /usr/bin/memcached ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends memcached >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends memcached; }
  # The tests start their own memcached on a private port; the packaged one is not needed.
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now memcached >/dev/null 2>&1 || true; fi
fi

if [ ! -f "$stamp" ]; then
  mkdir -p .test-servers
  flock /tmp/stowage-pip.lock bash -c "
    set -euo pipefail
    [ -x '$venv/bin/python' ] || python3 -m venv '$venv'
    '$venv/bin/pip' install --quiet --no-compile --upgrade pip
    '$venv/bin/pip' install --quiet --no-compile 'swift==$SWIFT_VERSION'
  "
  touch "$stamp"
fi
