#!/usr/bin/env bash
# The edge cache tier (deploy/varnish/, tests/edge): Varnish with the xkey vmod from
# Debian's packages (varnish-modules). The tests run varnishd as the current user on a
# free loopback port with the shipped VCL: the packaged service is disabled.
set -euo pipefail
if ! command -v varnishd >/dev/null 2>&1 && [ ! -x /usr/sbin/varnishd ] \
   || ! ls /usr/lib/*/varnish/vmods/libvmod_xkey.so >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  run() { if command -v flock >/dev/null 2>&1; then flock /tmp/stowage-apt.lock "$@"; else "$@"; fi; }
  run apt-get install -y -qq --no-install-recommends varnish varnish-modules >/dev/null 2>&1 \
    || { run apt-get update -qq && run apt-get install -y -qq --no-install-recommends varnish varnish-modules; }
  if command -v systemctl >/dev/null 2>&1; then
    systemctl disable --now varnish varnishncsa >/dev/null 2>&1 || true
  fi
  # Without systemd, the package's postinst may have started the default instance.
  if [ -f /run/varnishd.pid ]; then kill "$(cat /run/varnishd.pid)" >/dev/null 2>&1 || true; fi
fi
