#!/usr/bin/env bash
# ffmpeg and ffprobe for video_convert (stowage/processing/video*.py, docs/transformations.md):
# Debian's package, run by the video worker as subprocesses under prlimit (util-linux) with
# a deadline. Tests generate their clips with ffmpeg's lavfi sources.
set -euo pipefail

if ! command -v ffmpeg >/dev/null 2>&1 || ! command -v ffprobe >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null; }
fi
command -v prlimit >/dev/null 2>&1 || apt-get install -y -qq util-linux >/dev/null
