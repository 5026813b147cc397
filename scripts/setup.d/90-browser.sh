#!/usr/bin/env bash
# Headless Chromium for the console's browser tests (tests/browser): Debian's chromium,
# driven by Playwright's Python package pointed at /usr/bin/chromium. Playwright's own
# browser download is never used. The server's urlscreenshot task runs the same chromium
# (processing/screenshots.py, setting screenshot_browser), without Playwright.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v chromium >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core; }
fi
# urlscreenshot brings up the loopback of the browser's own network namespace with ip.
command -v ip >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends iproute2 >/dev/null
if ! .venv/bin/python -c "import playwright" 2>/dev/null; then
  flock /tmp/stowage-pip.lock .venv/bin/pip install --quiet --no-compile "playwright==1.65.2"
fi
