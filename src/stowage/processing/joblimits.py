"""What one transformation may use: the job limits of the settings, and the number and
bytes of the sources it reads (the main file, a list's, a watermark's and a collage's)."""

from __future__ import annotations

from stowage import errors
from stowage.config import Settings
from stowage.processing import metrics
from stowage.processing.base import Limits
from stowage.registry.base import FileRecord


def limits_of(settings: Settings) -> Limits:
    """The processing limits of the settings, as every job takes them."""
    return Limits(
        max_input_pixels=settings.processing_max_input_pixels,
        max_input_bytes=settings.processing_max_input_bytes,
        max_output_dimension=settings.processing_max_output_dimension,
        seconds=settings.processing_job_seconds,
        max_frames=settings.processing_max_frames,
        max_total_pixels=settings.processing_max_total_pixels,
        max_cost=settings.processing_max_job_cost,
        big_cost=settings.processing_big_job_cost,
        max_output_bytes=settings.processing_max_output_bytes,
    )


def count_within(settings: Settings, count: int) -> None:
    most = settings.processing_max_sources
    if count > most:
        raise errors.InvalidParameter(
            f"at most {most} sources in one transformation (a repeat counts); {count} asked",
            parameter="sources",
        )


def bytes_within(settings: Settings, total: int) -> None:
    most = settings.processing_max_sources_bytes
    if total > most:
        metrics.REFUSALS.inc(code=errors.PayloadTooLarge.code)
        raise errors.PayloadTooLarge(
            f"the sources hold {total} bytes; at most {most}", max_bytes=most
        )


def within(settings: Settings, count: int, total: int) -> None:
    """Sources of a job: their number and their bytes."""
    count_within(settings, count)
    bytes_within(settings, total)


def input_bytes_within(limits: Limits, row: FileRecord) -> None:
    """One source's bytes, from its row, before it is read."""
    if row.size > limits.max_input_bytes:
        metrics.REFUSALS.inc(code=errors.PayloadTooLarge.code)
        raise errors.PayloadTooLarge(max_bytes=limits.max_input_bytes)
