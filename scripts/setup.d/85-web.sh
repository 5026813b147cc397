#!/usr/bin/env bash
# Swagger UI for /api/docs (tests/api/test_openapi.py checks the page is served locally) and
# the picker module for static.<cname>, built from web/picker/ on Uppy with esbuild
# (tests/browser/test_picker.py); both by scripts/vendor-web, with Node and npm.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm; }
fi
scripts/vendor-web
