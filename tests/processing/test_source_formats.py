"""What a result holds, source format by source format: its bands and colour space (one
rule for every chain), the metadata it carries (none its source did not have), and the
``quality`` task alone answering a file that is no JPEG as it is."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pyvips

from stowage.processing import chain
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(10**8, 10**9, 10_000, 60)
#: Tasks that place, turn or resize pixels and add no colour of their own.
GEOMETRY = [
    "flip",
    "flop",
    "rotate=deg:90",
    "rotate=deg:180",
    "resize=width:{w}",
    "crop=dim:[0,0,{w},{h}]",
]
#: Formats that hold grey as grey: a grey result must read back as one band (and alpha).
GREY_OUTPUTS = ["png", "tiff", "jpg"]


def render(source: Path, segments: list[str], mimetype: str, dest_dir: Path) -> Path:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, mimetype)
    dest = dest_dir / f"out.{output.extension}"
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    return dest


def _source(kind: str, width: int, height: int, seed: int) -> pyvips.Image:
    noise = pyvips.Image.gaussnoise(width, height, sigma=50, mean=128, seed=seed)
    grey = noise.cast("uchar")
    alpha = (grey.flip("horizontal") > 100).ifthenelse(255, 60).cast("uchar")
    if kind == "grey16":
        return (grey.cast("ushort") * 257).copy(interpretation="grey16")
    if kind == "greya16":
        return (grey.bandjoin(alpha).cast("ushort") * 257).copy(interpretation="grey16")
    if kind == "rgb16":
        rgb = grey.bandjoin([grey.flip("vertical"), grey.flip("horizontal")])
        return (rgb.cast("ushort") * 257).copy(interpretation="rgb16")
    if kind == "greya":
        return grey.bandjoin(alpha).copy(interpretation="b-w")
    return grey.copy(interpretation="b-w")


@pytest.mark.parametrize("seed", range(12))
def test_a_results_bands_follow_its_sources_whatever_the_chain(tmp_path: Path, seed: int) -> None:
    """A grey source (8 or 16 bits, alpha or not) gives 8-bit grey, a 16-bit colour one
    8-bit sRGB, through every chain: a 16-bit grey PNG was sRGB through a flip and grey
    through a resize."""
    rng = random.Random(seed)
    kind = rng.choice(["grey16", "greya16", "rgb16", "greya", "grey"])
    width, height = rng.randrange(20, 90), rng.randrange(20, 90)
    source = tmp_path / "source.png"
    _source(kind, width, height, seed).pngsave(str(source))
    tasks = [
        rng.choice(GEOMETRY).format(w=rng.randrange(5, width), h=rng.randrange(5, height))
        for _ in range(rng.randrange(0, 3))
    ]
    fmt = rng.choice(GREY_OUTPUTS)
    made = pyvips.Image.new_from_file(
        str(render(source, [*tasks, f"output=format:{fmt}"], "image/png", tmp_path))
    )
    grey = kind != "rgb16"
    alpha = kind in ("greya16", "greya") and fmt != "jpg"  # a JPEG is flattened
    assert made.format == "uchar", (kind, tasks, fmt)
    assert made.bands == (1 if grey else 3) + alpha, (kind, tasks, fmt, made.bands)
    assert made.interpretation == ("b-w" if grey else "srgb"), (kind, tasks, fmt)


METADATA_FIELDS = ("exif-data", "xmp-data", "iptc-data", "icc-profile-data")
WRITERS = {
    "png": ("pngsave", "image/png"),
    "jpg": ("jpegsave", "image/jpeg"),
    "webp": ("webpsave", "image/webp"),
    "tiff": ("tiffsave", "image/tiff"),
    "avif": ("heifsave", "image/avif"),
    "gif": ("gifsave", "image/gif"),
}


@pytest.mark.parametrize("seed", range(8))
def test_a_result_carries_no_metadata_its_source_did_not_have(tmp_path: Path, seed: int) -> None:
    """A PNG made by Pillow, with no Exif, came out of ``output=format:png`` with an
    ``eXIf`` chunk libvips' saver wrote (and a JPEG, WebP or AVIF with an Exif block)."""
    rng = random.Random(seed)
    source_format = rng.choice(sorted(WRITERS))
    writer, mimetype = WRITERS[source_format]
    image = _source("grey", rng.randrange(10, 60), rng.randrange(10, 60), seed)
    image = image.bandjoin([image.flip("vertical"), image]).copy(interpretation="srgb")
    source = tmp_path / f"source.{source_format}"
    options = {"compression": "av1"} if writer == "heifsave" else {}
    getattr(image, writer)(str(source), keep="none", **options)
    assert not [f for f in METADATA_FIELDS if pyvips.Image.new_from_file(str(source)).get_typeof(f)]
    for result in sorted(WRITERS):
        tasks = rng.choice([[], ["flip"], ["resize=width:8"]])
        made = render(source, [*tasks, f"output=format:{result}"], mimetype, tmp_path)
        header = pyvips.Image.new_from_file(str(made))
        held = [f for f in METADATA_FIELDS if header.get_typeof(f)]
        assert not held, (source_format, tasks, result, held)


@pytest.mark.parametrize("source_format", sorted(set(WRITERS) - {"jpg"}))
def test_the_quality_task_alone_answers_a_file_that_is_no_jpeg_as_it_is(
    tmp_path: Path, source_format: str
) -> None:
    """``quality=value:100`` of a 1.6 KB AVIF was a new 9 KB encode: the loader's name
    (``heifload``) was compared with the format's (``avif``)."""
    rng = random.Random(source_format)
    writer, mimetype = WRITERS[source_format]
    for _ in range(3):
        image = _source("grey", rng.randrange(10, 80), rng.randrange(10, 80), rng.randrange(99))
        image = image.bandjoin([image.flip("vertical"), image]).copy(interpretation="srgb")
        source = tmp_path / f"source.{source_format}"
        options = {"compression": "av1"} if writer == "heifsave" else {}
        getattr(image, writer)(str(source), **options)
        made = render(source, [f"quality=value:{rng.randrange(1, 101)}"], mimetype, tmp_path)
        assert made.read_bytes() == source.read_bytes(), source_format


def _compact_source(path: Path, kind: str, rng: random.Random) -> None:
    """Files their encoder already made small: a palette PNG (Pillow, optimised), an
    optimised or progressive JPEG, a GIF, a lossless WebP of few colours."""
    from PIL import Image

    width, height, colours = rng.randrange(20, 300), rng.randrange(20, 300), rng.randrange(2, 17)
    image = Image.new("P", (width, height))
    image.putpalette([rng.randrange(256) for _ in range(768)])
    step = rng.randrange(1, 30)
    image.putdata([(x // step + y // step) % colours for y in range(height) for x in range(width)])
    if kind == "png":
        image.save(path, "PNG", optimize=True)
    elif kind == "gif":
        image.save(path, "GIF", optimize=True)
    elif kind == "webp":
        image.convert("RGB").save(path, "WEBP", lossless=True, method=6)
    else:
        image.convert("RGB").save(path, "JPEG", optimize=True, progressive=rng.random() < 0.5)


@pytest.mark.parametrize("seed", range(10))
def test_compress_alone_never_answers_a_larger_file(tmp_path: Path, seed: int) -> None:
    """``compress`` of an optimised 1.5 KB palette PNG was a 2.4 KB RGB one: the result is
    the smaller of the new file and the source, and shows the same pixels."""
    rng = random.Random(seed)
    for _ in range(3):
        kind = rng.choice(["png", "gif", "webp", "jpg"])
        source = tmp_path / f"source.{kind}"
        _compact_source(source, kind, rng)
        task = rng.choice(["compress", "compress=metadata:false", "output=compress:true"])
        made = render(source, [task], WRITERS[kind][1], tmp_path)
        assert made.stat().st_size <= source.stat().st_size, (kind, task)
        before, after = (pyvips.Image.new_from_file(str(p)) for p in (source, made))
        assert (after.width, after.height) == (before.width, before.height)
        if kind != "jpg":  # lossless: the same pixels
            assert (_rgb(after) - _rgb(before)).abs().max() == 0, (kind, task)


def _rgb(image: pyvips.Image) -> pyvips.Image:
    return image.colourspace("srgb")[0:3] if image.bands >= 3 else image.colourspace("srgb")


def _jpeg2000(path: Path, mode: str, width: int, height: int, seed: int) -> pyvips.Image:
    """A JPEG 2000 file of ``mode`` (lossless, so its pixels are known), and its pixels."""
    from PIL import Image

    bands = {"L": 1, "RGB": 3, "RGBA": 4}[mode]
    image = pyvips.Image.gaussnoise(width, height * bands, sigma=60, mean=128, seed=seed)
    planes = [image.crop(0, height * b, width, height).cast("uchar") for b in range(bands)]
    pixels = planes[0].bandjoin(planes[1:]) if bands > 1 else planes[0]
    made = Image.frombytes(mode, (width, height), pixels.write_to_memory())
    made.save(path, "JPEG2000", irreversible=False)
    return pixels


@pytest.mark.parametrize("seed", range(6))
def test_a_jpeg2000_source_goes_through_every_task(tmp_path: Path, seed: int) -> None:
    """The bundled libvips has no JPEG 2000 loader: a .jp2 answered 415 to imagesize,
    resize and output while the File API read its size."""
    import json

    rng = random.Random(seed)
    mode = rng.choice(["L", "RGB", "RGBA"])
    width, height = rng.randrange(20, 200), rng.randrange(20, 200)
    source = tmp_path / ("a.jp2" if seed % 2 else "a.bin")  # by content, not by name
    pixels = _jpeg2000(source, mode, width, height, seed)
    size = json.loads(render(source, ["imagesize"], "image/jp2", tmp_path).read_text())
    assert (size["width"], size["height"]) == (width, height)
    made = pyvips.Image.new_from_file(str(render(source, ["flip"], "image/jp2", tmp_path)))
    assert (made.width, made.height, made.bands) == (width, height, pixels.bands)
    assert (made - pixels.flip("vertical")).abs().max() == 0  # lossless: the same pixels
    half = rng.randrange(5, width)
    made = pyvips.Image.new_from_file(
        str(render(source, [f"resize=width:{half}", "output=format:webp"], "image/jp2", tmp_path))
    )
    assert made.width == half
    assert abs(made.height - height * half / width) <= 1


def test_a_jpeg2000_over_the_pixel_limit_is_refused_from_its_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PIL import Jpeg2KImagePlugin

    from stowage import errors

    source = tmp_path / "big.jp2"
    _jpeg2000(source, "RGB", 300, 200, 1)

    def decoded(*_: object) -> None:
        raise AssertionError("the pixels were decoded")

    monkeypatch.setattr(Jpeg2KImagePlugin.Jpeg2KImageFile, "load", decoded)
    parsed = chain.parse(["resize=width:10"])
    output = chain.output_for(parsed, "image/jp2")
    small = Limits(300 * 200 - 1, 10**9, 10_000, 60)
    with pytest.raises(errors.ImageTooLarge):
        VipsEngine().render(source, parsed, output, tmp_path / "out.png", small)


def test_a_jpeg_xl_file_is_refused_with_its_reason(tmp_path: Path) -> None:
    from stowage import errors

    source = tmp_path / "a.jxl"
    source.write_bytes(b"\x00\x00\x00\x0cJXL \r\n\x87\n" + bytes(200))
    with pytest.raises(errors.NotAnImage, match="JPEG XL"):
        render(source, ["flip"], "image/jxl", tmp_path)


#: The kinds of metadata each result format holds as saved here (docs/transformations.md:
#: a GIF none, IPTC only JPEG and TIFF).
HOLDS = {
    "jpg": {"exif-data", "xmp-data", "iptc-data", "icc-profile-data"},
    "png": {"exif-data", "xmp-data", "icc-profile-data"},
    "webp": {"exif-data", "xmp-data", "icc-profile-data"},
    "avif": {"exif-data", "xmp-data", "icc-profile-data"},
    "tiff": {"exif-data", "xmp-data", "iptc-data", "icc-profile-data"},
    "gif": set(),
}
_XMP = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/></x:xmpmeta>'
_IPTC = b"Photoshop 3.0\x008BIM\x04\x04\x00\x00\x00\x00\x00\x0c\x1c\x02\x05\x00\x07caption"


def _with_metadata(image: pyvips.Image, kinds: set[str], seed: int) -> pyvips.Image:
    from PIL import Image

    image = image.icc_transform("srgb") if "icc-profile-data" in kinds else image.copy()
    for field in set(METADATA_FIELDS) - kinds:
        if image.get_typeof(field):
            image.remove(field)
    exif = Image.Exif()
    exif[0x010F] = f"Camera {seed}"
    blobs = {"exif-data": exif.tobytes(), "xmp-data": _XMP, "iptc-data": _IPTC}
    for field in kinds - {"icc-profile-data"}:
        image.set_type(pyvips.GValue.blob_type, field, blobs[field])
    return image


@pytest.mark.parametrize("subset", range(16))
def test_a_result_holds_the_metadata_its_source_had_that_its_format_holds(
    tmp_path: Path, subset: int
) -> None:
    """Pillow's JPEG path wrote an Exif block for a source without one and dropped its
    IPTC, which libvips kept; a TIFF result lost the Exif. Every subset of the four kinds
    x Pillow's path and libvips' x every output format: exactly the kinds the source had
    that the format holds, none when stripped."""
    from PIL import Image

    kinds = {f for bit, f in enumerate(METADATA_FIELDS) if subset >> bit & 1}
    rng = random.Random(subset)
    image = _source("grey", rng.randrange(40, 90), rng.randrange(40, 90), subset)
    image = image.bandjoin([image.flip("vertical"), image]).copy(interpretation="srgb")
    source_format = rng.choice(["jpg", "jpg", "png", "webp", "avif"])  # (libvips reads no
    writer, mimetype = WRITERS[source_format]  # Exif from a TIFF: no TIFF source)
    source = tmp_path / f"source.{source_format}"
    keep = ",".join(f.split("-")[0] for f in kinds) or "none"  # exif-data: "exif", ...
    options = {"compression": "av1"} if writer == "heifsave" else {}
    getattr(_with_metadata(image, kinds, subset), writer)(str(source), keep=keep, **options)
    had = {f for f in METADATA_FIELDS if pyvips.Image.new_from_file(str(source)).get_typeof(f)}
    assert had == kinds & HOLDS[source_format]
    for result in sorted(HOLDS):
        for pillow in (True, False):
            strip = rng.choice([None, None, "no_metadata", "output=strip:true"])
            tasks = [f"resize=width:{rng.randrange(10, 39)}", f"output=format:{result}"]
            parsed = chain.parse([*tasks, *([strip] if strip else [])])
            output = chain.output_for(parsed, mimetype)
            dest = tmp_path / f"out.{output.extension}"
            VipsEngine(threads_per_job=1, pillow_jpeg=pillow).render(
                source, parsed, output, dest, LIMITS
            )
            header = pyvips.Image.new_from_file(str(dest))
            held = {f for f in METADATA_FIELDS if header.get_typeof(f)}
            if result == "tiff":  # libvips reads no Exif from a TIFF: Pillow does
                assert header.avg() >= 0  # and libvips still reads the file whole
                with Image.open(dest) as made:
                    exif = made.getexif()
                    if exif.get(0x010F) == f"Camera {subset}":
                        held.add("exif-data")
                        sizes = exif.get_ifd(0x8769)
                        assert (sizes[0xA002], sizes[0xA003]) == (header.width, header.height)
            expected = set() if strip else had & HOLDS[result]
            assert held == expected, (source_format, sorted(had), result, pillow, strip)


def _box(kind: bytes, body: bytes) -> bytes:
    import struct

    return struct.pack(">I4s", len(body) + 8, kind) + body


def _jp2_with(jp2: bytes, icc: bytes | None, xmp: bytes | None) -> bytes:
    """Pillow's JP2 with its ``colr`` box made an ICC one (method 2) and an ``xml `` box."""
    import struct

    out, at = b"", 0
    while at < len(jp2):
        length, kind = struct.unpack_from(">I4s", jp2, at)
        length = length or len(jp2) - at
        body = jp2[at + 8 : at + length]
        if kind == b"jp2h" and icc:
            inner, i = b"", 0
            while i < len(body):
                size, inner_kind = struct.unpack_from(">I4s", body, i)
                colr = inner_kind == b"colr"
                inner += _box(b"colr", bytes([2, 0, 0]) + icc) if colr else body[i : i + size]
                i += size
            body = inner
        out += _box(kind, body)
        if kind == b"jp2h" and xmp:
            out += _box(b"xml ", xmp)
        at += length
    return out


@pytest.mark.parametrize("seed", range(6))
def test_a_jpeg2000_shows_its_profile_and_keeps_its_xmp(tmp_path: Path, seed: int) -> None:
    """A JP2 tagged with a wide-gamut profile (``colr`` method 2) was shown as sRGB: the
    TIFF Pillow's decode was saved to had no profile, nor the file's XMP. It now shows
    the colours of a PNG with that profile, and keeps the XMP a result format holds."""
    import io

    from PIL import Image

    rng = random.Random(seed)
    width, height = rng.randrange(30, 90), rng.randrange(30, 90)
    noise = _source("grey", width, height, seed)
    bands = [noise, noise.flip("vertical"), noise.flip("horizontal")]
    saturated = [(band > 128).ifthenelse(255, 0).cast("uchar") for band in bands]
    rgb = saturated[0].bandjoin(saturated[1:]).copy(interpretation="srgb")  # where P3 differs
    tagged = rgb.icc_export(output_profile="p3")  # its pixels P3's, the profile attached
    png = tmp_path / "p3.png"
    tagged.pngsave(str(png))
    plain = io.BytesIO()
    pixels = Image.frombytes("RGB", (width, height), tagged.write_to_memory())
    pixels.save(plain, "JPEG2000", irreversible=False)
    with_xmp = rng.random() < 0.5
    jp2 = tmp_path / "p3.jp2"
    jp2.write_bytes(
        _jp2_with(plain.getvalue(), tagged.get("icc-profile-data"), _XMP if with_xmp else None)
    )
    tasks = rng.choice([[], ["flip"], [f"resize=width:{width // 2}"]])
    result = rng.choice(["png", "webp", "jpg", "tiff"])
    strip = rng.choice([[], ["no_metadata"]])
    segments = [*tasks, f"output=format:{result}", *strip]
    made = {}
    for source, mimetype in ((png, "image/png"), (jp2, "image/jp2")):
        folder = tmp_path / source.suffix[1:]  # one result each: libvips reads lazily
        folder.mkdir()
        out = pyvips.Image.new_from_file(str(render(source, segments, mimetype, folder)))
        if out.get_typeof("icc-profile-data"):
            out = out.icc_transform("srgb", embedded=True)
        made[mimetype] = out.extract_band(0, n=3).cast("float")
        held = bool(out.get_typeof("xmp-data")) if mimetype == "image/jp2" else with_xmp
    for band in range(3):
        means = [made[m][band].avg() for m in made]
        assert abs(means[0] - means[1]) <= 2, (segments, band, means)
    assert held == (with_xmp and not strip and result != "gif"), (segments, with_xmp)


@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_a_tiffs_orientation_tag_is_kept_in_every_format(tmp_path: Path, orientation: int) -> None:
    """A TIFF's orientation is a tag of its own, not Exif: its JPEG, PNG and WebP results
    had none (``keep`` left Exif out, the source having no Exif block), so they showed
    on their side, while its AVIF (an ``irot`` box) and TIFF results kept it (seed 9510
    of the source probes). Stripped, no result holds it."""
    image = _source("grey", 60, 40, orientation)
    image = image.bandjoin([image.flip("vertical"), image]).copy(interpretation="srgb")
    image.set_type(pyvips.GValue.gint_type, "orientation", orientation)
    source = tmp_path / "source.tif"
    image.tiffsave(str(source))
    assert not pyvips.Image.new_from_file(str(source)).get_typeof("exif-data")
    turned = orientation in (5, 6, 7, 8)
    for result in ("jpg", "png", "webp", "tiff", "avif"):
        for tasks in ([], ["resize=width:30"]):
            made = render(source, [*tasks, f"output=format:{result}"], "image/tiff", tmp_path)
            header = pyvips.Image.new_from_file(str(made))
            width = 30 if tasks else 60
            if result == "avif":  # libheif turns it by its irot box as it decodes
                shown = (width * 2 // 3, width) if turned else (width, width * 2 // 3)
                assert (header.width, header.height) == shown, (result, tasks)
                continue
            assert (header.width, header.height) == (width, width * 2 // 3), (result, tasks)
            assert header.get("orientation") == orientation, (result, tasks)
            stripped = render(
                source, [*tasks, f"output=format:{result},strip:true"], "image/tiff", tmp_path
            )
            header = pyvips.Image.new_from_file(str(stripped))
            assert header.get_typeof("orientation") == 0 or header.get("orientation") == 1
