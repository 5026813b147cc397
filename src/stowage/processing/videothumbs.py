"""The stills of a completed video conversion (the status answer's ``data.thumb``,
``thumb100x100`` and ``thumb200x200``): one frame of the result, taken by the same
sandboxed ffmpeg in the same job, written at its own size and fitted within 100x100 and
200x200 (the aspect kept, never enlarged), in one ffmpeg run.

The frame is the result's (so a watermark, a scale or a clip is in it): at
``thumbnail_offset`` when it falls inside the result, else at 1 s, or the middle of a
result shorter than 2 s.
"""

from __future__ import annotations

from pathlib import Path

from stowage.processing import ffmpeg, video
from stowage.processing.base import Task
from stowage.processing.ffmpeg import Limits, MediaRefused

#: (the status answer's name, the box the still fits in; None: the frame's own size).
STILLS: tuple[tuple[str, int | None], ...] = (
    ("thumb", None),
    ("thumb100x100", 100),
    ("thumb200x200", 200),
)
DEFAULT_OFFSET = 1.0  # seconds into the result
#: The result is ours, and for HLS a playlist ``videoresults.segments_of`` checked.
_GUARD = ("-protocol_whitelist", "file", "-format_whitelist", ffmpeg.DEMUXERS + ",hls")
_JPEG = ("-frames:v", "1", "-update", "1", "-c:v", "mjpeg", "-q:v", "3", "-f", "image2")


def wanted(plan: video.Plan) -> bool:
    """A conversion to video has stills; an audio result and a thumbnail preset do not."""
    return bool(plan.preset.video) and not plan.preset.still


def offset(task: Task, seconds: float) -> float:
    """Where the frame is taken in a result ``seconds`` long (0: its length unknown)."""
    asked = task.get("thumbnail_offset")
    if asked is not None and (seconds <= 0 or float(str(asked)) < seconds):
        return float(str(asked))
    return min(DEFAULT_OFFSET, seconds / 2) if seconds > 0 else 0.0


async def make(
    result: Path, plan: video.Plan, task: Task, seconds: float, limits: Limits
) -> tuple[tuple[str, Path], ...]:
    """The stills of ``result`` (a file ffmpeg made in the job folder), beside it:
    ``(name, path)`` in ``STILLS``' order; none when the plan makes no video (``wanted``).
    ``MediaRefused`` when ffmpeg makes none."""
    if not wanted(plan):
        return ()
    folder = result.parent
    splits = "".join(f"[s{n}]" for n in range(len(STILLS)))
    graph = [f"[0:v]split={len(STILLS)}{splits}"]
    outputs: list[str] = []
    made: list[tuple[str, Path]] = []
    for n, (name, box) in enumerate(STILLS):
        path = folder / f"{name}.jpg"
        fit = "null"
        if box is not None:
            fit = f"scale='min({box},iw)':'min({box},ih)':force_original_aspect_ratio=decrease"
        graph.append(f"[s{n}]{fit}[o{n}]")
        outputs += ["-map", f"[o{n}]", *_JPEG, f"file:{path}"]
        made.append((name, path))
    argv = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-y", *_GUARD]
    argv += ["-ss", f"{offset(task, seconds):g}", "-i", f"file:{result}"]
    argv += ["-filter_complex", ";".join(graph), *outputs]
    await ffmpeg.run(argv, limits, cwd=folder, seconds=min(limits.seconds, 60.0))
    if not all(path.is_file() and path.stat().st_size for _, path in made):
        raise MediaRefused("ffmpeg took no frame of the result for its thumbnails")
    return tuple(made)
