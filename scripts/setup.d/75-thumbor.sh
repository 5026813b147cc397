#!/usr/bin/env bash
# Thumbor, the benchmark's image-processing peer (bench/processing.py, issue 15).
# Thumbor pins its own stack (Pillow, tornado, ...), so it gets its own venv under
# .test-servers/ instead of sharing the project's .venv, as Swift does.
set -euo pipefail
cd "$(dirname "$0")/../.."

THUMBOR_VERSION="7.8.0"
venv=".test-servers/thumbor-venv"
# [opencv]: its face and feature detectors, which its smart crop runs (bench/thumbor.py).
stamp="$venv/.installed-thumbor-$THUMBOR_VERSION-opencv"

if [ ! -f "$stamp" ]; then
  mkdir -p .test-servers
  flock /tmp/stowage-pip.lock bash -c "
    set -euo pipefail
    [ -x '$venv/bin/python' ] || python3 -m venv '$venv'
    '$venv/bin/pip' install --quiet --no-compile --upgrade pip
    '$venv/bin/pip' install --quiet --no-compile 'thumbor[opencv]==$THUMBOR_VERSION'
  "
  # Fails here, not in the middle of a benchmark, if the release does not run on this Python.
  "$venv/bin/thumbor" --help >/dev/null
  "$venv/bin/python" -c "import cv2, thumbor.detectors.face_detector"
  touch "$stamp"
fi
