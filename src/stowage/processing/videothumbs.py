"""The stills of a completed video conversion (the status answer's ``data.thumb``,
``thumb100x100`` and ``thumb200x200``): one frame of the result, written at its own size
and fitted within 100x100 and 200x200 (the aspect kept, never enlarged).

They are taken by the conversion's own ffmpeg run: three more outputs of the frames it
decodes, cut to the one frame at the offset, then scaled as the plan scales its video
(``Stills.args``). A second ffmpeg run from the stored result cost about 0.1 s, a tenth
of a short clip's conversion. A plan with a watermark lays the mark over the frames in a
graph of two inputs, so its stills keep a run of their own, from the result (``make``),
where the mark is.

The frame is at ``thumbnail_offset`` when it falls inside the result, else at 1 s, or the
middle of a result shorter than 2 s.
"""

from __future__ import annotations

from dataclasses import dataclass
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
Made = tuple[tuple[str, Path], ...]  # (name, path) in STILLS' order


def wanted(plan: video.Plan) -> bool:
    """A conversion to video has stills; an audio result and a thumbnail preset do not."""
    return bool(plan.preset.video) and not plan.preset.still


def offset(task: Task, seconds: float | None) -> float:
    """Where the frame is taken in a result ``seconds`` long (0: its length unknown;
    None: not yet probed, the likely offset)."""
    asked = task.get("thumbnail_offset")
    if asked is not None and (not seconds or float(str(asked)) < seconds):
        return float(str(asked))
    if seconds is None:
        return DEFAULT_OFFSET
    return min(DEFAULT_OFFSET, seconds / 2) if seconds > 0 else 0.0


@dataclass(frozen=True)
class Stills:
    """The stills of one conversion: ``args`` are the extra outputs its ffmpeg run writes
    them with (none: ``collect`` takes them from the result in a run of their own)."""

    plan: video.Plan
    task: Task
    seconds: float  # the result's length, as the plan and the input's probe say
    args: tuple[str, ...] = ()
    made: Made = ()

    async def collect(self, result: Path, limits: Limits) -> Made:
        """The stills, beside ``result``; ``MediaRefused`` when ffmpeg made none."""
        if not wanted(self.plan):
            return ()
        if not self.args:
            return await make(result, self.plan, self.task, self.seconds, limits)
        return _checked(self.made)


def of(plan: video.Plan, task: Task, seconds: float | None, folder: Path) -> Stills:
    """How the stills of ``plan``'s conversion are taken (see the module's docstring);
    ``seconds`` None: the result's length is not known yet, and the outputs are the
    likely ones (``videorun.hold``)."""
    if not wanted(plan) or plan.watermark is not None:
        return Stills(plan, task, seconds or 0.0)
    # One frame at the offset, then the stream ends: an output that only stops at its
    # frame count is still fed every frame (about 0.3 s each for a 10 s 720p clip). No
    # ``-map``: ffmpeg picks the video stream for them as for the result (and a held run
    # has one input more, ``videorun.py``).
    one = f"setpts=PTS-STARTPTS,trim=start={offset(task, seconds):g},trim=end_frame=1"
    frame = _option(plan, "-vf")  # the plan's scale, which the encoded frames have
    args: list[str] = []
    made: list[tuple[str, Path]] = []
    for name, box in STILLS:
        path = folder / f"{name}.jpg"
        chain = ",".join(f for f in (one, frame, _fit(box)) if f)
        args += ["-vf", chain, *_JPEG, f"file:{path}"]
        made.append((name, path))
    return Stills(plan, task, seconds or 0.0, tuple(args), tuple(made))


async def make(result: Path, plan: video.Plan, task: Task, seconds: float, limits: Limits) -> Made:
    """The stills of ``result`` (a file ffmpeg made in the job folder), beside it, in one
    ffmpeg run of their own; none when the plan makes no video (``wanted``)."""
    if not wanted(plan):
        return ()
    folder = result.parent
    splits = "".join(f"[s{n}]" for n in range(len(STILLS)))
    graph = [f"[0:v]split={len(STILLS)}{splits}"]
    outputs: list[str] = []
    made: list[tuple[str, Path]] = []
    for n, (name, box) in enumerate(STILLS):
        path = folder / f"{name}.jpg"
        graph.append(f"[s{n}]{_fit(box) or 'null'}[o{n}]")
        outputs += ["-map", f"[o{n}]", *_JPEG, f"file:{path}"]
        made.append((name, path))
    argv = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-y", *_GUARD]
    argv += ["-ss", f"{offset(task, seconds):g}", "-i", f"file:{result}"]
    argv += ["-filter_complex", ";".join(graph), *outputs]
    await ffmpeg.run(argv, limits, cwd=folder, seconds=min(limits.seconds, 60.0))
    return _checked(tuple(made))


def _fit(box: int | None) -> str | None:
    if box is None:
        return None
    return f"scale='min({box},iw)':'min({box},ih)':force_original_aspect_ratio=decrease"


def _option(plan: video.Plan, name: str) -> str | None:
    options = list(plan.options)
    return options[options.index(name) + 1] if name in options else None


def _checked(made: Made) -> Made:
    if not all(path.is_file() and path.stat().st_size for _, path in made):
        raise MediaRefused("ffmpeg took no frame of the result for its thumbnails")
    return made
