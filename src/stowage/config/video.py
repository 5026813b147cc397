"""The video and audio conversions' settings (``video_*``): what a job may read, how long
and how much memory ffmpeg may take, and how many jobs a node runs."""

from __future__ import annotations

from dataclasses import dataclass

from stowage.config.base import GiB
from stowage.config.base import setting as _setting
from stowage.values import coerce


@dataclass
class VideoSettings:
    video_jobs: int = _setting(
        1,
        "video_convert jobs this node runs at once (each an ffmpeg process); 0: this node "
        "runs none, other nodes of the registry do.",
        form=coerce.integer(0, 64),
    )
    video_job_seconds: float = _setting(
        600.0,
        "Seconds one conversion's ffmpeg may run before it is killed (the job fails).",
        form=coerce.duration(1),
    )
    video_lease_seconds: float = _setting(
        60.0,
        "Lease of a running conversion in the registry: its node renews it every third of "
        "this while the job runs; a node that stops renewing (killed) has its job taken "
        "over by another node about this long after.",
        form=coerce.duration(1, 3600),
    )
    video_job_memory: int = _setting(
        4 * GiB,
        "Address space ffmpeg and each probe of a file may use (RLIMIT_AS), in bytes; 0: no limit.",
        form=coerce.size(0),
    )
    video_max_input_bytes: int = _setting(
        2 * GiB,
        "Largest file a conversion reads (the job fails beyond).",
        form=coerce.size(1),
    )
    video_max_output_bytes: int = _setting(
        2 * GiB,
        "Largest result a conversion may write (RLIMIT_FSIZE: ffmpeg stops there, the job fails).",
        form=coerce.size(1),
    )
    video_max_duration: float = _setting(
        7200.0,
        "Longest media a conversion reads, in seconds, as the probe reads it from the "
        "file before converting (the job fails beyond).",
        form=coerce.duration(1),
    )
    video_max_dimension: int = _setting(
        4096,
        "Largest width or height of a video stream a conversion reads (the job fails beyond).",
        form=coerce.integer(16),
    )
    video_max_streams: int = _setting(
        8,
        "Most streams (video, audio, subtitles, data) a file a conversion reads may have.",
        form=coerce.integer(1),
    )
    video_attempts: int = _setting(
        3,
        "Times a conversion is tried when its node stops or ffmpeg cannot be run; a file "
        "ffmpeg refuses fails at once.",
        form=coerce.integer(1, 100),
    )
