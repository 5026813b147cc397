#!/usr/bin/env bash
# PostgreSQL (registry tests, multi-node tests) and nginx (the multi-node load balancer),
# from Debian's packages, plus the asyncpg driver in the project venv; curl, openssl and
# systemd-analyze for tests/e2e/test_single_node_deploy.py. The tests start their own
# throwaway cluster and nginx on loopback ports; the packaged services are left stopped.
set -euo pipefail
cd "$(dirname "$0")/../.."

missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
[ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; }
  # The packages may start their own services (port 80, port 5432): the tests use none.
  if command -v systemctl >/dev/null 2>&1; then
    systemctl disable --now nginx postgresql >/dev/null 2>&1 || true
  fi
  if command -v service >/dev/null 2>&1; then
    service nginx stop >/dev/null 2>&1 || true
    service postgresql stop >/dev/null 2>&1 || true
  fi
fi

if ! .venv/bin/python -c "import asyncpg" 2>/dev/null; then
  flock /tmp/stowage-pip.lock .venv/bin/pip install --quiet --no-compile "asyncpg>=0.29"
fi
