#!/usr/bin/env bash
# ffmpeg for video_convert (stowage/processing/video*.py, docs/transformations.md): Debian's
# package, run by the video worker as subprocesses under prlimit (util-linux) with a
# deadline; python3-av (the same Debian libav, for Debian's /usr/bin/python3) for the probe
# process that reads each input first (processing/prober.py). Tests generate their clips
# with ffmpeg's lavfi sources and compare the probe's readings with ffprobe's.
set -euo pipefail

needed=()
command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1 || needed+=(ffmpeg)
/usr/bin/python3 -c 'import av' >/dev/null 2>&1 || needed+=(python3-av)
if ((${#needed[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${needed[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${needed[@]}" >/dev/null; }
fi
/usr/bin/python3 -c 'import av' || { echo "python3-av did not install" >&2; exit 1; }
command -v prlimit >/dev/null 2>&1 || apt-get install -y -qq util-linux >/dev/null
