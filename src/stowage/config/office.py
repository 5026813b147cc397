"""The Office documents' settings (``office_*``): how many warm LibreOffice converters a
node keeps, and how long and how much memory one conversion may take."""

from __future__ import annotations

from dataclasses import dataclass

from stowage.config.base import GiB
from stowage.config.base import setting as _setting
from stowage.values import coerce


@dataclass
class OfficeSettings:
    office_converters: int = _setting(
        2,
        "Warm LibreOffice converters each server process keeps (serve --workers N: N times "
        "as many on the node; each a headless soffice in the sandbox with a private profile, "
        "about 150 MB of memory); jobs beyond wait for one. 0: Office documents are refused "
        "with 415.",
        form=coerce.integer(0, 16),
    )
    office_prewarm: bool = _setting(
        True,
        "Start one LibreOffice converter in each server process at startup, in the "
        "background (startup and readiness do not wait), so that the first document does "
        "not wait seconds for it; nothing when office_converters is 0 or LibreOffice is "
        "missing.",
    )
    office_job_seconds: float = _setting(
        60.0,
        "Seconds one Office conversion may take before its converter is killed and "
        "replaced (the request fails with 422 PROCESSING_TIMEOUT).",
        form=coerce.duration(1),
    )
    office_job_memory: int = _setting(
        4 * GiB,
        "Address space a LibreOffice converter may use (RLIMIT_AS), in bytes; 0: no limit.",
        form=coerce.size(0),
    )
    office_max_output_bytes: int = _setting(
        512 * 1024 * 1024,
        "Largest file a conversion may write (RLIMIT_FSIZE).",
        form=coerce.size(1),
    )
