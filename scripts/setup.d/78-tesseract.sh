#!/usr/bin/env bash
# Tesseract 5 (English) for the ocr task (stowage/processing/ocr.py, docs/transformations.md):
# Debian's package, run by the job process under unshare -n, setpriv and prlimit (util-linux).
set -euo pipefail

if ! command -v tesseract >/dev/null 2>&1 || [ ! -e /usr/share/tesseract-ocr/5/tessdata/eng.traineddata ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends tesseract-ocr tesseract-ocr-eng >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends tesseract-ocr tesseract-ocr-eng >/dev/null; }
fi
command -v prlimit >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 \
  || apt-get install -y -qq util-linux >/dev/null
