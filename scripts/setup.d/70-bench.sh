#!/usr/bin/env bash
# The benchmark's peers and load generator (bench/, scripts/bench): nginx (with the
# WebDAV module for PUT uploads), wrk, and poppler-utils (pdftoppm, the documents
# scenario's reference) from Debian's packages. nginx is only run by
# the benchmark, as the current user on a free port: the packaged service is disabled.
set -euo pipefail
missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v pdftoppm >/dev/null 2>&1 || missing+=(poppler-utils)
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; }
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now nginx >/dev/null 2>&1 || true; fi
  # Without systemd, the package's postinst may have started the default site: stop it.
  if [ -f /run/nginx.pid ]; then /usr/sbin/nginx -s quit >/dev/null 2>&1 || true; fi
fi
