#!/usr/bin/env bash
# The versions of the servers the tests run, one line each ("version: <server> <version>"),
# so that a CI log says what it tested against. Runs last, after every install; never fails:
# a server that is missing says so on its line.
set -uo pipefail
cd "$(dirname "$0")/../.."

line() {  # line NAME COMMAND...: the first line the command prints, or "missing"
  local name="$1"; shift
  local found
  found="$("$@" 2>&1 | grep -v '^\s*$' | head -n 1)" && [ -n "$found" ] || found="missing"
  echo "version: $name $found"
}
py_dist() {  # py_dist PYTHON DIST: an installed distribution's version
  "$1" -c "import importlib.metadata as m; print(m.version('$2'))"
}
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

line python .venv/bin/python --version
line postgresql "$(pg_bin)/postgres" --version
line nginx /usr/sbin/nginx -v
line varnish /usr/sbin/varnishd -V
line memcached memcached -V
line swift py_dist .test-servers/swift-venv/bin/python swift
line moto py_dist .venv/bin/python moto
line gcp-storage-emulator py_dist .venv/bin/python gcp-storage-emulator
line azurite node -p "require('./.test-servers/azurite/node_modules/azurite/package.json').version"
line node node --version
line thumbor py_dist .test-servers/thumbor-venv/bin/python thumbor
line libvips .venv/bin/python -c "import pyvips; print(pyvips.version(0), pyvips.version(1), pyvips.version(2), sep='.')"
line chromium sh -c "chromium --version 2>/dev/null"
line tesseract tesseract --version
exit 0
