"""The processing engine's settings (``processing_*``): limits, jobs and their costs."""

from __future__ import annotations

from dataclasses import dataclass

from stowage.config.base import GiB, MiB
from stowage.config.base import setting as _setting
from stowage.values import coerce

#: Seconds a job process gets past its deadline before it is killed (``processing/pool.py``);
#: the edge's last purge echo waits for it too (``edge/purger.py``).
JOB_GRACE_SECONDS = 2.0


@dataclass
class ProcessingSettings:
    processing_max_input_pixels: int = _setting(
        100_000_000,
        "Transformations refuse images with more pixels than this (422 IMAGE_TOO_LARGE), "
        "read from the image header before anything is decoded (decompression bombs).",
        form=coerce.integer(1),
    )
    processing_max_input_bytes: int = _setting(
        200 * MiB, "Largest file a transformation reads (413 beyond).", form=coerce.size(1)
    )
    processing_max_output_dimension: int = _setting(
        10_000,
        "Largest width or height a transformation may produce (422 IMAGE_TOO_LARGE beyond).",
        form=coerce.integer(1),
    )
    processing_max_output_bytes: int = _setting(
        100 * MiB,
        "Largest result a transformation may produce, in bytes (422 IMAGE_TOO_LARGE beyond: "
        "the save stops there, so an oversized result never fills the disk; a text answer, a PDF "
        "or a file answered as it is is refused once made, before it is cached).",
        form=coerce.size(1),
    )
    processing_job_seconds: float = _setting(
        30.0,
        "Seconds one transformation may run before it is stopped (422 PROCESSING_TIMEOUT).",
        form=coerce.duration(),
    )
    processing_jobs: int = _setting(
        0,
        "Transformations running at once in each server process, each in a job process "
        "of its own (serve --workers N: N times as many on the node); 0: one per CPU core.",
        form=coerce.integer(0),
    )
    processing_job_memory: int = _setting(
        2 * GiB,
        "Address space a job process may use, in bytes (422 IMAGE_TOO_LARGE beyond); 0: no limit.",
        form=coerce.size(0),
    )
    processing_max_frames: int = _setting(
        1000,
        "Most frames a transformation decodes: an animation's (kept as one when the result "
        "is a GIF or WebP), or a GIF's frames up to the page asked for (422 IMAGE_TOO_LARGE "
        "beyond).",
        form=coerce.integer(1),
    )
    processing_max_total_pixels: int = _setting(
        200_000_000,
        "Most pixels of all the frames a transformation decodes or makes (frames x width x "
        "height; 422 IMAGE_TOO_LARGE beyond). One frame is held to "
        "processing_max_input_pixels.",
        form=coerce.integer(1),
    )
    processing_max_job_cost: float = _setting(
        8.0,
        "Most work a transformation may need, as seconds of one core estimated from the "
        "header and the tasks before it runs (422 PROCESSING_TOO_COSTLY beyond).",
        form=coerce.number(0),
    )
    processing_big_job_cost: float = _setting(
        1.0,
        "Estimated seconds of work beyond which a transformation is a big job: big jobs run "
        "in at most processing_jobs - processing_small_job_slots slots at once.",
        form=coerce.number(0),
    )
    processing_small_job_slots: int = _setting(
        1,
        "Job slots big jobs never take, so that small ones do not wait behind them (with "
        "one job slot, big jobs take it too).",
        form=coerce.integer(0),
    )
    processing_small_job_seconds: float = _setting(
        5.0,
        "Seconds a job estimated small may run in a small job's slot; past it, it is "
        "stopped and run again as a big job (the estimate cannot see how long a PDF page "
        "or an SVG takes to draw), so small jobs never wait longer behind it.",
        form=coerce.duration(),
    )
    processing_small_drawing_seconds: float = _setting(
        1.0,
        "Seconds a job estimated small whose source is drawn, not decoded (an SVG, a PDF, "
        "a document), may run in a small job's slot (at most processing_small_job_seconds); "
        "past it, it is run again as a big job. At most processing_jobs - "
        "processing_small_job_slots such jobs run at once.",
        form=coerce.duration(),
    )
    processing_wait_seconds: float = _setting(
        10.0,
        "Seconds a transformation may wait for a job slot; beyond, 503 PROCESSING_BUSY "
        "with Retry-After (the lane's expected wait, 1-30 s).",
        form=coerce.duration(),
    )
    processing_max_sources: int = _setting(
        16,
        "Most sources one transformation uses (watermark, collage, animate, zip, pdfcreate), "
        "the main one included and a handle listed twice counted twice (400 "
        "INVALID_PARAMETER beyond).",
        form=coerce.integer(1, 1000),
    )
    processing_max_sources_bytes: int = _setting(
        200 * MiB,
        "Most bytes of all the sources one transformation uses, from their rows before any "
        "is read, a file listed twice counted twice (413 PAYLOAD_TOO_LARGE beyond).",
        form=coerce.size(1),
    )
    processing_url_sources_bytes: int = _setting(
        2 * GiB,
        "Most bytes the kept copies of URL sources (``data_dir/url-sources``, revalidated "
        "with their validators) hold together on a node; the least recently used are "
        "removed past it, as past 512 copies. 0: none kept (every use fetches the whole file).",
        form=coerce.size(0),
    )
    processing_queue: int = _setting(
        16,
        "Transformations that may wait for a free job slot, in each lane (small jobs, big "
        "jobs: counted apart); beyond, 503 PROCESSING_BUSY at once with Retry-After, the "
        "lane's expected wait (no unbounded queue).",
        form=coerce.integer(0),
    )
    processing_pillow_jpeg: bool = _setting(
        True,
        "Resize a JPEG to a smaller WebP or JPEG with Pillow (libjpeg's DCT scaling, one "
        "Lanczos reduction) when the chain is only resize (width, height, fit clip, max or "
        "scale) with output format and quality: the same size, metadata and limits as "
        "libvips', for less CPU (docs/decisions.md). Off: libvips renders every chain.",
    )
