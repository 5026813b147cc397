"""``video_convert`` (filestack-js) and ``av_convert`` (filestack-python's name for it):
the task's declaration, and its options turned into an ffmpeg plan before a job starts.

The conversion itself is asynchronous (``videojobs.py``: a job in the registry's queue,
run by any node's worker with ``ffmpeg.py``); this module only reads the task. Every
parameter the two SDK schemas list is declared and range-checked; ``force`` asks for a
new job where one completed (``videojobs.py``), ``two_pass`` for two ffmpeg passes when
the video is encoded to a bitrate. A watermark (``watermark_url``: a
URL or a handle of the app) is an image the job reads into its folder first; the plan
only places it.
"""

from __future__ import annotations

from dataclasses import dataclass

from stowage import errors, words
from stowage.processing.base import Task
from stowage.processing.params import boolean, choice, integer, text
from stowage.processing.request_tasks import LOCATIONS
from stowage.processing.table import Kind, Param, TaskSpec
from stowage.processing.videooptions import clock, extension

NAME = "video_convert"
ASPECT_MODES = ("letterbox", "pad", "crop", "preserve", "constrain")
SIDES = ("top", "right", "bottom", "left", "width", "height")
WATERMARK = ("watermark_url", *(f"watermark_{side}" for side in SIDES))


@dataclass(frozen=True)
class Preset:
    """What a preset makes: the container, the result's type, and its codec options."""

    name: str
    extension: str
    mimetype: str
    muxer: str
    video: tuple[str, ...] = ()  # empty: no video in the result
    audio: tuple[str, ...] = ()  # empty: no audio in the result
    still: bool = False  # one frame (thumbnail)


_X264 = ("-c:v", "libx264", "-pix_fmt", "yuv420p")
HLS_TYPE = "application/vnd.apple.mpegurl"
HLS_SEGMENT_SECONDS = 6
#: Segment files of an HLS result, in the job folder beside the playlist.
SEGMENT_NAME = "segment%05d.ts"
_AAC = ("-c:a", "aac", "-b:a", "128k")
_VORBIS = ("-c:a", "libvorbis", "-b:a", "128k")
PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "thumbnail", "jpg", "image/jpeg", "image2", ("-c:v", "mjpeg", "-q:v", "3"), (), True
        ),
        Preset(
            "h264",
            "mp4",
            "video/mp4",
            "mp4",
            (*_X264, "-preset", "veryfast", "-crf", "23"),
            _AAC,
        ),
        Preset(
            "h264.hi",
            "mp4",
            "video/mp4",
            "mp4",
            (*_X264, "-preset", "medium", "-crf", "18"),
            ("-c:a", "aac", "-b:a", "192k"),
        ),
        Preset(
            "webm",
            "webm",
            "video/webm",
            "webm",
            ("-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "1M"),
            _VORBIS,
        ),
        Preset(
            "webm.hi",
            "webm",
            "video/webm",
            "webm",
            (
                "-c:v",
                "libvpx-vp9",
                "-deadline",
                "good",
                "-cpu-used",
                "4",
                "-crf",
                "31",
                "-b:v",
                "0",
            ),
            ("-c:a", "libopus", "-b:a", "128k"),
        ),
        Preset(
            "hls.variant",
            "m3u8",
            HLS_TYPE,
            "hls",
            (*_X264, "-preset", "veryfast", "-crf", "23"),
            _AAC,
        ),
        Preset("hls.variant.audio", "m3u8", HLS_TYPE, "hls", (), _AAC),
        Preset("mp3", "mp3", "audio/mpeg", "mp3", (), ("-c:a", "libmp3lame", "-b:a", "192k")),
        Preset("aac", "m4a", "audio/mp4", "ipod", (), _AAC),
        Preset("m4a", "m4a", "audio/mp4", "ipod", (), _AAC),
        Preset("ogg", "ogg", "audio/ogg", "ogg", (), _VORBIS),
        Preset("oga", "oga", "audio/ogg", "ogg", (), _VORBIS),
    )
}
_AUDIO_CODECS = {"aac": "aac", "mp3": "libmp3lame", "vorbis": "libvorbis", "opus": "libopus"}
#: The sample rates an encoder takes (``ffmpeg -h encoder=aac``; libvorbis takes any): a
#: rate the schema allows (1-99999 Hz) that it does not take is made the nearest it does.
_MP3_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)
SAMPLE_RATES = {
    "aac": (7350, *_MP3_RATES, 64000, 88200, 96000),
    "libmp3lame": _MP3_RATES,
    "libopus": (8000, 12000, 16000, 24000, 48000),
}
_STILL_TYPES = {
    "jpg": ("image/jpeg", "mjpeg"),
    "jpeg": ("image/jpeg", "mjpeg"),
    "png": ("image/png", "png"),
}


_SIZE = integer(1, 4096)
TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        NAME,
        (
            Param("preset", choice(*PRESETS), (), "h264"),
            Param("force", boolean),
            Param("title", text),
            Param("extname", extension),
            Param("filename", text),
            Param("width", _SIZE),
            Param("height", _SIZE),
            Param("upscale", boolean, (), True),
            Param("aspect_mode", choice(*ASPECT_MODES), (), "letterbox"),
            Param("two_pass", boolean),
            Param("video_bitrate", integer(1, 5000)),
            Param("fps", integer(1, 300)),
            Param("keyframe_interval", integer(1, 1000)),
            Param("audio_codec", choice(*_AUDIO_CODECS)),
            Param("audio_bitrate", integer(1, 999)),
            Param("audio_sample_rate", integer(1, 99999), ("audio_samplerate",)),  # swift
            Param("audio_channels", integer(1, 12)),
            Param("clip_length", clock),
            Param("clip_offset", clock),
            Param("thumbnail_offset", integer(0, 86_399)),
            Param("frame_count", integer(1, 1)),
            Param("watermark_url", text),
            *(Param(name, integer(0, 9999)) for name in WATERMARK[1:5]),
            *(Param(name, integer(1, 9999)) for name in WATERMARK[5:]),
            Param("location", choice(*LOCATIONS), (), "s3"),
            Param("path", text),
            Param("container", text),
            Param("access", choice("public", "private"), (), "public"),
        ),
        kind=Kind.REQUEST,
        aliases=("av_convert",),
        doc="video and audio conversion as a job: the URL answers its status (video section)",
    ),
)


@dataclass(frozen=True)
class Plan:
    """A checked conversion: the preset, the result's name and type, and ffmpeg's options
    (input options before ``-i``, output options after)."""

    preset: Preset
    extension: str
    mimetype: str
    seek: float | None  # clip_offset or thumbnail_offset, in seconds
    length: float | None  # clip_length
    options: tuple[str, ...]
    watermark: Watermark | None = None
    two_pass: bool = False  # ffmpeg runs twice: see ``argv``'s ``pass_``

    def argv(
        self,
        source: str,
        dest: str,
        watermark: str | None = None,
        *,
        pass_: int = 0,
        passlog: str = "",
    ) -> list[str]:
        """ffmpeg's arguments; ``watermark``: the image's path (``file:``), with its own
        input guard (``WATERMARK_GUARD``), when the plan has one. ``pass_`` 1 or 2 of a
        two-pass plan, with the encoder's statistics at ``passlog`` (a plain path, which
        ffmpeg does not read as a URL): the first pass encodes the video only, to the
        ``null`` muxer (which writes nothing), the second uses its statistics."""
        seek = ["-ss", f"{self.seek:g}"] if self.seek is not None else []
        length = ["-t", f"{self.length:g}"] if self.length is not None else []
        segments: list[str] = []
        if self.preset.muxer == "hls" and pass_ != 1:  # beside the playlist
            segments = ["-hls_segment_filename", f"{dest.rsplit('/', 1)[0]}/{SEGMENT_NAME}"]
        if pass_:
            segments = ["-pass", str(pass_), "-passlogfile", passlog, *segments]
        if pass_ == 1:
            segments += ["-an", "-f", "null"]
        options, second = list(self.options), []
        if self.watermark is not None:
            if watermark is None:
                raise ValueError("the plan has a watermark: its image's path is needed")
            second = [*WATERMARK_GUARD, "-i", watermark]
            options = self.watermark.overlay(options, audio=bool(self.preset.audio))
        return [*seek, "-i", source, *second, *length, *options, *segments, dest]


#: The watermark input: one still image, opened as a file, by a demuxer that reads one
#: stream (``image2`` would read numbered siblings).
WATERMARK_DEMUXERS = "png_pipe,jpeg_pipe,webp_pipe,bmp_pipe,gif"
WATERMARK_GUARD = ("-protocol_whitelist", "file", "-format_whitelist", WATERMARK_DEMUXERS)


@dataclass(frozen=True)
class Watermark:
    """Where the watermark image goes: ``x``/``y`` as overlay expressions of the frame
    (``W``, ``H``) and the mark (``w``, ``h``), and its size (None: its own)."""

    source: str  # a URL or a handle of the app
    x: str
    y: str
    width: int | None
    height: int | None

    def overlay(self, options: list[str], *, audio: bool) -> list[str]:
        """``options`` with the video filter (``-vf``) turned into a graph that scales the
        frame as before, then lays the (scaled) mark over it."""
        frame = "null"
        if "-vf" in options:
            at = options.index("-vf")
            frame = options[at + 1]
            del options[at : at + 2]
        mark = "null"
        if self.width is not None or self.height is not None:
            mark = f"scale={self.width or -1}:{self.height or -1}"
        graph = f"[0:v]{frame}[frame];[1:v]{mark}[mark];[frame][mark]overlay={self.x}:{self.y}[v]"
        return [
            "-filter_complex",
            graph,
            "-map",
            "[v]",
            *(["-map", "0:a?"] if audio else []),
            *options,
        ]


def plan(task: Task) -> Plan:
    """The task's options as an ffmpeg plan; a 400 for what cannot be done."""
    preset = PRESETS[str(task.get("preset") or "h264")]
    mark = _watermark(task, preset)
    extension, mimetype, video = _output(task, preset)
    options: list[str] = ["-map_metadata", "-1"]
    options += _video_options(task, preset, video) if preset.video else ["-vn"]
    options += _audio_options(task, preset) if preset.audio else ["-an"]
    options += ["-sn", "-dn"]
    if task.get("title") and not preset.still:
        options += ["-metadata", f"title={task.get('title')}"]
    if preset.muxer in ("mp4", "ipod"):
        options += ["-movflags", "+faststart"]
    if preset.muxer == "hls":
        options += _HLS
    options += ["-f", preset.muxer]
    seek = _seconds(task, "clip_offset")
    if preset.still:
        seek = float(task.get("thumbnail_offset") or 0)  # type: ignore[arg-type]
    length = None if preset.still else _seconds(task, "clip_length")
    if length == 0:
        raise _bad("clip_length", "must be more than 0 seconds")
    two = task.get("two_pass") is True and _two_pass(options)
    return Plan(preset, extension, mimetype, seek, length, tuple(options), mark, two)


def _two_pass(options: list[str]) -> bool:
    """Whether a second pass can improve the video: only when it is encoded to a bitrate
    (a first pass tells the second where the bits are best spent). A constant-quality
    encoding (x264's ``-crf`` without ``video_bitrate``, ``-b:v 0``) is one pass whatever
    ``two_pass`` says: its quality is the target already. With a bitrate, x264's ``-crf``
    goes (x264 refuses it in a second pass) and libvpx's realtime mode becomes ``good``.
    Changes ``options``."""
    rates = [options[n + 1] for n, o in enumerate(options) if o == "-b:v"]
    if not rates or rates[-1] == "0":
        return False
    if "libx264" in options and "-crf" in options:
        at = options.index("-crf")
        del options[at : at + 2]
    if "-deadline" in options:  # libvpx's realtime mode writes no first-pass statistics
        options[options.index("-deadline") + 1] = "good"
    return True


#: VOD playlists of MPEG-TS segments; a keyframe starts every segment, so each plays alone.
_HLS = (
    "-hls_time",
    str(HLS_SEGMENT_SECONDS),
    "-hls_playlist_type",
    "vod",
    "-hls_segment_type",
    "mpegts",
    "-hls_list_size",
    "0",
)


def _watermark(task: Task, preset: Preset) -> Watermark | None:
    """The watermark's place, checked: an image over a video, at most one offset each way."""
    source = task.get("watermark_url")
    given = [name for name in WATERMARK[1:] if task.get(name) is not None]
    if source is None:
        if given:
            raise _bad(given[0], "needs watermark_url (the image: a URL or a handle)")
        return None
    if not preset.video:
        raise _bad("watermark_url", f"preset {preset.name} makes no video to mark")
    if not words.trimmed(str(source)):
        raise _bad("watermark_url", "must be a URL or a handle")
    for one, other in (
        ("watermark_left", "watermark_right"),
        ("watermark_top", "watermark_bottom"),
    ):
        if one in given and other in given:
            raise _bad(other, f"give {one} or {other}, not both")
    left, right = task.get("watermark_left"), task.get("watermark_right")
    top, bottom = task.get("watermark_top"), task.get("watermark_bottom")
    x = f"W-w-{right}" if right is not None else str(left or 0)
    y = f"H-h-{bottom}" if bottom is not None else str(top or 0)
    width, height = task.get("watermark_width"), task.get("watermark_height")
    return Watermark(
        words.trimmed(str(source)),
        x,
        y,
        None if width is None else int(str(width)),
        None if height is None else int(str(height)),
    )


def _output(task: Task, preset: Preset) -> tuple[str, str, tuple[str, ...]]:
    """The result's extension and type (``extname`` may choose PNG for a thumbnail)."""
    raw = task.get("extname")
    if raw is None:
        return preset.extension, preset.mimetype, preset.video
    name = str(raw)  # checked and normalised by ``extension``
    if preset.muxer == "hls" and name != preset.extension:
        raise _bad("extname", "an HLS result is .m3u8")
    if preset.still:
        if name not in _STILL_TYPES:
            raise _bad("extname", "a thumbnail is .jpg or .png")
        mimetype, codec = _STILL_TYPES[name]
        return name, mimetype, ("-c:v", codec) + (("-q:v", "3") if codec == "mjpeg" else ())
    return name, preset.mimetype, preset.video


def _video_options(task: Task, preset: Preset, codec: tuple[str, ...]) -> list[str]:
    options = [*codec]
    scale = _scale(task, even=not preset.still)
    if preset.still:
        options += ["-frames:v", "1", "-update", "1"]
    if scale:
        options += ["-vf", scale]
    if task.get("fps") is not None and not preset.still:
        options += ["-r", str(task.get("fps"))]
    if task.get("video_bitrate") is not None and not preset.still:
        options += ["-b:v", f"{task.get('video_bitrate')}k"]
    if task.get("keyframe_interval") is not None and not preset.still:
        options += ["-g", str(task.get("keyframe_interval"))]
    if preset.muxer == "hls":
        options += ["-force_key_frames", f"expr:gte(t,n_forced*{HLS_SEGMENT_SECONDS})"]
    return options


def _audio_options(task: Task, preset: Preset) -> list[str]:
    options = [*preset.audio]
    codec = task.get("audio_codec")
    if codec is not None:
        options[1] = _AUDIO_CODECS[str(codec)]
    if task.get("audio_bitrate") is not None:
        options[3] = f"{task.get('audio_bitrate')}k"
    if (rate := task.get("audio_sample_rate")) is not None:
        taken = SAMPLE_RATES.get(options[1], (int(str(rate)),))
        options += ["-ar", str(min(taken, key=lambda r: (abs(r - int(str(rate))), -r)))]
    if task.get("audio_channels") is not None:
        options += ["-ac", str(task.get("audio_channels"))]
    return options


def _scale(task: Task, *, even: bool) -> str | None:
    """The ``-vf`` filter for width, height, aspect_mode and upscale, or None."""
    width, height = task.get("width"), task.get("height")
    if width is None and height is None:
        return None
    mode = str(task.get("aspect_mode") or "letterbox")
    grow = task.get("upscale") is not False and mode != "constrain"
    step = 2 if even else 1
    if width is None or height is None:  # one side: the other follows the aspect
        w = f"{width}" if width is not None else f"-{step}"
        h = f"{height}" if height is not None else f"-{step}"
        if not grow:
            w = f"'min({width},iw)'" if width is not None else w
            h = f"'min({height},ih)'" if height is not None else h
        return f"scale={w}:{h}"
    box_w, box_h = (width, height) if grow else (f"'min({width},iw)'", f"'min({height},ih)'")
    divisible = f":force_divisible_by={step}"
    if mode == "crop":
        return (
            f"scale={box_w}:{box_h}:force_original_aspect_ratio=increase{divisible},"
            f"crop='min(iw,{width})':'min(ih,{height})'"
        )
    fit = f"scale={box_w}:{box_h}:force_original_aspect_ratio=decrease{divisible}"
    if mode in ("letterbox", "pad"):
        return f"{fit},pad={box_w}:{box_h}:(ow-iw)/2:(oh-ih)/2"
    return fit  # preserve, constrain


def _seconds(task: Task, name: str) -> float | None:
    raw = task.get(name)  # seconds, as ``clock`` made them
    return None if raw is None else float(raw)  # type: ignore[arg-type]


def _bad(option: str, reason: str) -> errors.InvalidParameter:
    return errors.InvalidParameter(f"{NAME}.{option}: {reason}", parameter=f"{NAME}.{option}")
