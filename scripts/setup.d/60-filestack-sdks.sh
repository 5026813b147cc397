#!/usr/bin/env bash
# The official Filestack SDKs that tests/sdk drives against a real `stowage serve`:
# filestack-python (pinned in pyproject's `sdk-tests` extra) into the project venv, and
# filestack-js from the pinned tests/sdk/js/package*.json into .test-servers/filestack-js,
# and filestack-react from tests/browser/react/ into .test-servers/filestack-react (not
# committed); each reinstalled only when its pin changes.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY_SDK_VERSION="4.0.0"
installed="$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("filestack-python"))' 2>/dev/null || true)"
if [ "$installed" != "$PY_SDK_VERSION" ]; then
  flock /tmp/stowage-pip.lock .venv/bin/pip install --quiet --no-compile "filestack-python==$PY_SDK_VERSION"
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm; }
fi

# npm_install SRC DEST PACKAGE [NPM ARGS]: the pinned SRC/package*.json into DEST.
npm_install() {
  local src="$1" dest="$2" package="$3"
  shift 3
  local stamp
  stamp="$dest/.installed-$(sha256sum "$src/package-lock.json" | cut -c1-16)"
  if [ ! -f "$stamp" ] || [ ! -f "$dest/node_modules/$package/package.json" ]; then
    mkdir -p "$dest"
    rm -f "$dest"/.installed-*
    cp "$src/package.json" "$src/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error "$@")
    touch "$stamp"
  fi
}
npm_install tests/sdk/js .test-servers/filestack-js filestack-js
# filestack-react, React and esbuild for tests/browser/test_picker_react.py (its own
# folder: filestack-react brings filestack-js 3.x; esbuild finds its binary without its
# install script).
npm_install tests/browser/react .test-servers/filestack-react filestack-react --ignore-scripts
