"""Format negotiation (auto_image) and the saved URL shapes of issue 23, through the CDN
origin: the answer's format follows Accept, says Vary: Accept, and each format is its
own derivative."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ElementTree

import pytest
import pyvips

from stowage.processing import accepts
from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, picture, stored
from tests.processing import pdfs

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
CHROME = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
OLD_SAFARI = "image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5"


@pytest.mark.parametrize(
    ("accept", "fmt"),
    [
        (CHROME, "avif"),
        (OLD_SAFARI, "webp"),
        ("image/avif;q=0, image/webp", "webp"),
        ("image/png,*/*", None),
        ("", None),
        ("image/AVIF", "avif"),
    ],
)
def test_the_accept_header_picks_the_format(accept: str, fmt: str | None) -> None:
    assert accepts.accepted_format(accept) == fmt


async def test_auto_image_follows_accept_and_says_vary(harness: Harness) -> None:
    handle = await stored(harness, picture(400, 300, ".png"), name="p.png")
    seen = {}
    for accept, mimetype, loader in [
        (CHROME, "image/avif", "heifload_buffer"),
        (OLD_SAFARI, "image/webp", "webpload_buffer"),
        ("image/png,*/*", "image/png", "pngload_buffer"),
    ]:
        resp, body = await get(
            harness, f"/auto_image/compress/{handle}", headers={"Accept": accept}
        )
        assert resp.headers["Content-Type"] == mimetype
        assert "Accept" in resp.headers["Vary"]
        image = decoded(body)
        assert image.get("vips-loader") == loader
        assert (image.width, image.height) == (400, 300)
        seen[mimetype] = resp.headers["ETag"]
    assert len(set(seen.values())) == 3  # three derivatives, not one shared
    resp, _ = await get(harness, f"/compress/{handle}")
    assert "Vary" not in resp.headers


@pytest.mark.settings(processing_max_job_cost=1.0)
@pytest.mark.parametrize("chain", ["auto_image", "flip/auto_image/sepia"])
async def test_an_avif_too_costly_to_make_is_answered_as_what_else_the_client_takes(
    harness: Harness, chain: str
) -> None:
    """A 20-megapixel photo with auto_image was 422 PROCESSING_TOO_COSTLY for browsers
    that take AVIF, and WebP for those that do not. (Here: a 3-megapixel one, the limit at
    1 s: its AVIF is estimated at 1.5 s, its WebP at 0.5.) Chrome gets the WebP it takes,
    a client that takes AVIF alone the input's format, each with Vary: Accept."""
    big = await stored(harness, picture(2000, 1500, ".jpg"), name="big.jpg")
    small = await stored(harness, picture(200, 150, ".jpg"), name="small.jpg")
    for accept, handle, mimetype in (
        (CHROME, big, "image/webp"),
        ("image/avif", big, "image/jpeg"),
        ("image/avif;q=0.9, image/webp;q=0.1", big, "image/webp"),
        (CHROME, small, "image/avif"),  # one that is not too costly is still AVIF
        (OLD_SAFARI, big, "image/webp"),
    ):
        resp, body = await get(harness, f"/{chain}/{handle}", headers={"Accept": accept})
        assert resp.status == 200, (accept, body[:200])
        assert resp.headers["Content-Type"] == mimetype, accept
        assert "Accept" in resp.headers["Vary"]
        assert decoded(body).width == (200 if handle == small else 2000)
    await get(harness, f"/output=format:avif/{big}", status=422)  # asked for: refused as ever


def _jobs(metrics: str) -> float:
    """Every job the server ran or asked for, whatever its outcome."""
    lines = metrics.splitlines()
    return sum(
        float(line.split()[-1])
        for line in lines
        if line.startswith("stowage_processing_jobs_total{")
    )


@pytest.mark.settings(processing_max_job_cost=1.0)
async def test_an_avif_refused_as_too_costly_is_not_asked_for_again(harness: Harness) -> None:
    """Each request of such a URL asked a job for the AVIF, which refused it from the
    header, before the WebP was made or read: the refusal is remembered for that version."""
    big = await stored(harness, picture(2000, 1500, ".jpg"), name="big.jpg")
    for chain in ("auto_image", "cache=false/auto_image"):
        before = _jobs(await harness.metrics())
        for _ in range(3):
            resp, _ = await get(harness, f"/{chain}/{big}", headers={"Accept": CHROME})
            assert resp.headers["Content-Type"] == "image/webp"
        made = _jobs(await harness.metrics()) - before
        # The first: the AVIF's refusal and the WebP, once; then nothing or the WebP alone.
        assert made == (2 if chain == "auto_image" else 3), (chain, made)


async def test_the_hosted_shapes_answer_200(harness: Harness) -> None:
    handle = await stored(harness, picture(1200, 800))
    resp, body = await get(
        harness, f"/resize=w:640,h:386,f:crop,a:faces/output=q:60,f:pjpg/compress/{handle}"
    )
    image = decoded(body)
    assert (image.width, image.height, resp.headers["Content-Type"]) == (640, 386, "image/jpeg")
    assert b"\xff\xc2" in body  # progressive
    resp, body = await get(
        harness, f"/compress/output=format:webp/cache=expiry:max/resize=width:936/{handle}"
    )
    image = decoded(body)
    assert (image.width, image.height, resp.headers["Content-Type"]) == (936, 624, "image/webp")
    assert resp.headers["Cache-Control"] == "public, max-age=31536000"
    for task in ("sharpen=amount:0", "border=width:0", "blur=amount:0"):
        resp, body = await get(harness, f"/{task}/{handle}")
        assert (decoded(body).width, decoded(body).height) == (1200, 800)


@pytest.mark.parametrize(
    ("chain", "size"),
    [("output=format:svg", (64, 48)), ("resize=w:32/output=f:svg", (32, 24))],
)
async def test_svg_output_holds_the_result_as_a_png(
    harness: Harness, chain: str, size: tuple[int, int]
) -> None:
    """filestack-js's schema lets an SDK ask for svg: an SVG of the result's size holding
    it as a PNG (no tracing), with no script, served as an image."""
    handle = await stored(harness, picture(64, 48, ".png"), name="p.png")
    resp, body = await get(harness, f"/{chain}/{handle}")
    assert resp.headers["Content-Type"].startswith("image/svg+xml")
    root = ElementTree.fromstring(body)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert (int(root.get("width", 0)), int(root.get("height", 0))) == size
    (image,) = list(root)
    href = image.get("{http://www.w3.org/1999/xlink}href", "")
    assert href.startswith("data:image/png;base64,")
    inner = decoded(base64.b64decode(href.split(",", 1)[1]))
    assert (inner.width, inner.height) == size
    assert b"<script" not in body


#: (as Filestack's PHP SDK builds it: short names, lists as percent-encoded JSON; the
#: same in long names). ``MARK`` is the second file's handle.
PHP_SHAPES = [
    ("watermark=f:MARK,p:center,s:30", "watermark=file:MARK,position:center,size:30"),
    (
        "collage=f:%5B%22MARK%22%5D,w:300,h:200,c:white,i:auto,m:10,a:false",
        "collage=files:[MARK],width:300,height:200,color:white,fit:auto,margin:10,autorotate:false",
    ),
    ("rounded_corners=b:white,l:0.3,r:5", "rounded_corners=background:white,blur:0.3,radius:5"),
    (
        "shadow=b:white,l:4,o:60,v:%5B4%2C4%5D",
        "shadow=background:white,blur:4,opacity:60,vector:[4,4]",
    ),
    ("torn_edges=b:white,s:%5B1%2C10%5D", "torn_edges=background:white,spread:[1,10]"),
    ("polaroid=b:gray,c:white,r:45", "polaroid=background:gray,color:white,rotate:45"),
    ("vignette=a:20,b:white,m:gaussian", "vignette=amount:20,background:white,blurmode:gaussian"),
    (
        "partial_pixelate=a:10,l:4,o:%5B%5B10%2C20%2C200%2C150%5D%5D,t:oval",
        "partial_pixelate=amount:10,blur:4,objects:[[10,20,200,150]],type:oval",
    ),
    (
        "partial_blur=a:10,l:4,o:%5B%5B10%2C20%2C200%2C150%5D%5D,t:oval",
        "partial_blur=amount:10,blur:4,objects:[[10,20,200,150]],type:oval",
    ),
    ("oil_paint=a:5", "oil_paint=amount:5"),
    ("upscale=n:none,s:photo,u:true", "upscale=noise:none,style:photo,upscale:true"),
    ("compress=m:true", "compress=metadata:true"),
    (
        "ascii=b:black,c:true,f:white,r:false,s:40",
        "ascii=background:black,colored:true,foreground:white,reverse:false,size:40",
    ),
]


@pytest.mark.parametrize(
    ("short", "long"), PHP_SHAPES, ids=[s.split("=")[0] for s, _ in PHP_SHAPES]
)
async def test_urls_of_the_php_sdk_answer_as_their_long_spelling(
    harness: Harness, short: str, long: str
) -> None:
    """A URL the PHP SDK made and a customer saved gives what the long names give."""
    handle = await stored(harness, picture(400, 300))
    mark = await stored(harness, picture(60, 40, ".png"), name="m.png")
    answers = []
    for chain in (short, long):
        resp, body = await get(harness, f"/{chain.replace('MARK', mark)}/{handle}")
        assert resp.status == 200, body[:300]
        answers.append((resp.headers["Content-Type"], body))
    assert answers[0] == answers[1]


def _oriented_jpeg(orientation: int) -> bytes:
    xy = pyvips.Image.xyz(60, 30)
    image = (xy[0] * 4).bandjoin([xy[1] * 8, 90]).cast("uchar").copy()
    image.set_type(pyvips.GValue.gint_type, "orientation", orientation)
    data: bytes = image.jpegsave_buffer()
    return data


def _orientation(image: pyvips.Image) -> int | None:
    found: int | None = image.get("orientation") if image.get_typeof("orientation") else None
    return found


@pytest.mark.parametrize("orientation", [3, 6, 8])
async def test_exif_false_and_pjpg_metadata_false_do_what_the_sdks_say(
    harness: Harness, orientation: int
) -> None:
    """``rotate=exif:false`` sets the tag to 1 and leaves the pixels (it kept the tag);
    ``pjpg=metadata:false`` strips it (it was kept), ``pjpg`` alone keeps it."""
    handle = await stored(harness, _oriented_jpeg(orientation), name="o.jpg")
    cases = {
        "rotate=exif:false": (1, (60, 30)),
        "rotate=e:false,deg:90": (1, (30, 60)),
        "rotate=exif:true": (1, (30, 60) if orientation in (6, 8) else (60, 30)),
        "pjpg": (orientation, (60, 30)),
        "pjpg=metadata:false": (None, (60, 30)),
        "pjpg=m:false,q:50": (None, (60, 30)),
        "pjpg=metadata:true": (orientation, (60, 30)),
    }
    for tasks, (tag, size) in cases.items():
        resp = await harness.cdn.get(f"/{tasks}/{handle}")
        assert resp.status == 200, await resp.text()
        image = pyvips.Image.new_from_buffer(await resp.read(), "")
        assert (image.width, image.height) == size, tasks
        if tag is None:  # stripped: no EXIF at all
            assert image.get_typeof("exif-data") == 0, tasks
        else:  # 1 and no tag both show the pixels as stored
            assert _orientation(image) in ({tag} if tag != 1 else {1, None}), tasks


def _jpeg_at(quality: int, side: int = 120) -> bytes:
    noise = pyvips.Image.gaussnoise(side, side, sigma=30, mean=128, seed=quality)
    data: bytes = noise.bandjoin([noise, noise]).cast("uchar").jpegsave_buffer(Q=quality)
    return data


@pytest.mark.parametrize("quality", [20, 55, 75, 90, 97])
async def test_output_quality_input_keeps_the_source_quality(
    harness: Harness, quality: int
) -> None:
    """``quality:input`` was accepted and did nothing (every result at 75)."""
    handle = await stored(harness, _jpeg_at(quality), name="q.jpg")
    _, kept = await get(harness, f"/output=f:jpg,quality:input/flip/{handle}")
    _, asked = await get(harness, f"/output=f:jpg,quality:{quality}/flip/{handle}")
    assert kept == asked
    png = await stored(harness, picture(40, 30, ".png"), name="p.png")  # no quality to keep
    _, from_png = await get(harness, f"/output=f:jpg,q:input/{png}")
    _, default = await get(harness, f"/output=f:jpg/{png}")
    assert from_png == default


async def test_the_quality_task_never_answers_a_larger_file(harness: Harness) -> None:
    """The hosted rules: not a JPEG, the file as it is; a JPEG saved again that is not
    smaller, the original (quality:100 of a q90 photo was 8 times its size)."""
    original = _jpeg_at(90)
    handle = await stored(harness, original, name="q90.jpg")
    _, higher = await get(harness, f"/quality=value:100/{handle}")
    assert higher == original
    _, lower = await get(harness, f"/quality=value:30/{handle}")
    assert len(lower) < len(original) and lower[:2] == b"\xff\xd8"
    png_bytes = picture(40, 30, ".png")
    png = await stored(harness, png_bytes, name="p.png")
    resp, body = await get(harness, f"/quality=value:10/{png}")
    assert body == png_bytes and resp.headers["Content-Type"] == "image/png"
    # A document is drawn as ever (the as-it-is rule once refused it as no image).
    pdf = await stored(harness, pdfs.three_pages(), name="d.pdf")
    resp, body = await get(harness, f"/quality=value:50/{pdf}")
    assert resp.headers["Content-Type"] == "image/png" and decoded(body).width == 612


async def test_the_bare_tasks_the_sdk_builds_from_empty_options(harness: Harness) -> None:
    """``{quality: {}}`` and ``{smart_crop: {}}`` pass filestack-js's schema and build
    ``/quality/`` and ``/smart_crop/``: they were refused 400. No value: the encoder's
    default quality under the hosted rules; no size: the image's own."""
    original = _jpeg_at(95)
    handle = await stored(harness, original, name="q95.jpg")
    _, bare = await get(harness, f"/quality/{handle}")
    _, default = await get(harness, f"/quality=value:75/{handle}")
    assert bare == default and len(bare) < len(original)
    png_bytes = picture(40, 30, ".png")
    png = await stored(harness, png_bytes, name="p.png")
    _, body = await get(harness, f"/quality/{png}")
    assert body == png_bytes
    resp, body = await get(harness, f"/smart_crop/{png}")
    assert resp.status == 200, body
    assert (decoded(body).width, decoded(body).height) == (40, 30)


async def test_colorspace_input_keeps_a_cmyk_source_cmyk(harness: Harness) -> None:
    """``colorspace:input`` did what ``rgb`` does; a CMYK JPEG or TIFF stays CMYK with it."""
    rgb = pyvips.Image.xyz(60, 40)[0].cast("uchar").bandjoin([90, 160]).copy(interpretation="srgb")
    cmyk = await stored(harness, rgb.icc_transform("cmyk").jpegsave_buffer(), name="c.jpg")
    plain = await stored(harness, rgb.jpegsave_buffer(), name="r.jpg")
    for tasks, handle, bands in (
        ("output=colorspace:input", cmyk, 4),
        ("output=c:input,f:tiff", cmyk, 4),
        ("output=colorspace:input", plain, 3),
        ("flip", cmyk, 3),  # RGB unless asked
        ("output=colorspace:input,f:png", cmyk, 3),  # PNG holds no CMYK
    ):
        _, body = await get(harness, f"/{tasks}/{handle}")
        assert pyvips.Image.new_from_buffer(body, "").bands == bands, tasks


@pytest.mark.parametrize("tasks", ["flip", "rotate=deg:90", "output=format:png"])
async def test_a_png_result_is_filtered_as_png_encoders_do(harness: Harness, tasks: str) -> None:
    """Saved with each row's best filter: a 300x200 gradient with alpha (a few KB)
    came back as a 205 KB PNG, 60 times its source, from a flip."""
    xy = pyvips.Image.xyz(300, 200)
    gradient = xy[0].bandjoin([xy[1], xy[0] // 2, 255 - xy[1]]).cast("uchar")
    source = gradient.copy(interpretation="srgb").pngsave_buffer(filter="all")
    handle = await stored(harness, source, name="g.png")
    resp, body = await get(harness, f"/{tasks}/{handle}")
    assert resp.headers["Content-Type"] == "image/png"
    assert len(body) < 3 * len(source), (len(body), len(source))


def _animation(frames: int = 3) -> bytes:
    strip = (
        pyvips.Image.arrayjoin(
            [pyvips.Image.black(24, 16).new_from_image([60 * i, 90, 200]) for i in range(frames)],
            across=1,
        )
        .cast("uchar")
        .copy(interpretation="srgb")
    )
    strip.set_type(pyvips.GValue.gint_type, "page-height", 16)
    strip.set_type(pyvips.GValue.array_int_type, "delay", [100] * frames)
    data: bytes = strip.gifsave_buffer()
    return data


@pytest.mark.parametrize("chain", ["auto_image", "auto_image/resize=width:12", "flip/auto_image"])
async def test_auto_image_keeps_an_animation_where_avif_would_not(
    harness: Harness, chain: str
) -> None:
    """A browser that takes AVIF (all of today's) got a still of the first frame for an
    animated GIF: libvips writes AVIF as a still. The animation now comes as WebP."""
    animated = await stored(harness, _animation(), name="a.gif")
    photo = await stored(harness, picture(24, 16, ".png"), name="p.png")
    resp, body = await get(harness, f"/{chain}/{animated}", headers={"Accept": CHROME})
    assert resp.headers["Content-Type"] == "image/webp" and "Accept" in resp.headers["Vary"]
    assert pyvips.Image.new_from_buffer(body, "", n=-1).get("n-pages") == 3
    resp, _ = await get(harness, f"/{chain}/{photo}", headers={"Accept": CHROME})
    assert resp.headers["Content-Type"] == "image/avif"
    resp, body = await get(harness, f"/output=format:avif/{animated}")  # asked for: AVIF
    assert resp.headers["Content-Type"] == "image/avif"
    # A client that takes AVIF but not WebP keeps the animation in its own format.
    resp, body = await get(harness, f"/{chain}/{animated}", headers={"Accept": "image/avif"})
    assert resp.headers["Content-Type"] == "image/gif" and "Accept" in resp.headers["Vary"]
    assert pyvips.Image.new_from_buffer(body, "", n=-1).get("n-pages") == 3


@pytest.mark.parametrize(("mode", "width", "height"), [("RGB", 160, 100), ("L", 37, 91)])
async def test_a_stored_jpeg2000_is_transformed_and_sized_alike(
    harness: Harness, mode: str, width: int, height: int
) -> None:
    """A stored .jp2 answered 415 NOT_AN_IMAGE to imagesize, resize and output while
    the File API's metadata read its size (the bundled libvips has no JPEG 2000 loader)."""
    import io
    import json

    from PIL import Image

    out = io.BytesIO()
    Image.new(mode, (width, height), 90).save(out, "JPEG2000")
    handle = await stored(harness, out.getvalue(), name="a.jp2")
    resp = await harness.api.get(f"/api/file/{handle}/metadata?width=true&height=true")
    meta = await resp.json()
    _, body = await get(harness, f"/imagesize/{handle}")
    assert (meta["width"], meta["height"]) == tuple(json.loads(body).values()) == (width, height)
    _, body = await get(harness, f"/resize=width:{width // 2}/{handle}")
    assert decoded(body).width == width // 2
    _, body = await get(harness, f"/output=format:png/{handle}")
    assert (decoded(body).width, decoded(body).height) == (width, height)


def _jpeg2000_or_xl(kind: str, width: int, height: int, seed: int) -> bytes:
    """A JP2 file, a bare J2K codestream, or a JPEG XL signature (codestream, container)
    followed by bytes that are no image."""
    import io
    import random

    from PIL import Image

    if kind.startswith("jxl"):
        head = b"\xff\x0a" if kind == "jxl" else b"\x00\x00\x00\x0cJXL \r\n\x87\n"
        return head + random.Random(seed).randbytes(300)
    if kind == "heic":  # an iPhone photo's boxes: its size is in them, its HEVC not decoded
        from tests.core.test_heifsize import Layout

        brands = random.Random(seed).choice([(b"heic", b"mif1"), (b"mif1", b"heic")])
        return Layout((width, height), 0, 1, [], 0, 0, False, False).file(*brands)
    out = io.BytesIO()
    Image.new("RGB", (width, height), (seed % 256, 90, 200)).save(
        out, "JPEG2000", no_jp2=kind == "j2k"
    )
    return out.getvalue()


_RECORDED = {"jxl": "image/jxl", "hei": "image/heic"}


@pytest.mark.parametrize("seed", range(6))
async def test_jpeg2000_and_jpeg_xl_are_known_by_their_content(harness: Harness, seed: int) -> None:
    """A bare codestream named ``a.j2k`` (or with no name that says so) was recorded
    ``text/plain`` and sent to LibreOffice (``resize`` 422 INVALID_DOCUMENT); a JPEG XL
    named ``photo`` was drawn as an A4 page of text; a .jp2 named ``a.png`` was recorded
    ``image/png``; a HEIC was recorded ``video/mp4``, with no size, and 422 to a task.
    Signatures x names x upload routes x declared types."""
    import json
    import random

    import aiohttp

    rng = random.Random(seed)
    for _ in range(4):
        kind = rng.choice(["jp2", "j2k", "jxl", "jxl-box", "heic"])
        width, height = rng.randrange(30, 90), rng.randrange(30, 90)
        data = _jpeg2000_or_xl(kind, width, height, rng.randrange(256))
        name = rng.choice(["a.j2k", "a.j2c", "a.jpc", "photo", "a.png", "a.txt", "a.jp2"])
        declared = rng.choice([None, "application/octet-stream", "text/plain"])
        params = {"key": harness.open_app.api_key, "filename": name}
        if rng.random() < 0.5:
            headers = {"Content-Type": declared} if declared else {}
            resp = await harness.api.post(
                "/api/store/S3", params=params, data=data, headers=headers
            )
        else:
            form = aiohttp.FormData()
            form.add_field("fileUpload", data, filename=name, content_type=declared)
            resp = await harness.api.post("/api/store/S3", params=params, data=form)
        result = await resp.json()
        assert resp.status == 200, result
        case = (kind, name, declared)
        if declared != "text/plain":  # a specific declared type is recorded as declared
            assert result["type"] == _RECORDED.get(kind[:3], "image/jp2"), case
        handle = result["handle"]
        meta = await harness.api.get(f"/api/file/{handle}/metadata?width=true&height=true")
        sides = {k: v for k, v in (await meta.json()).items() if k in ("width", "height")}
        if kind.startswith("jxl"):
            assert sides == {}, case  # no decoder, no size
        elif kind == "heic" and declared != "text/plain":
            assert sides == {"width": width, "height": height}, case  # from its boxes
        if kind == "heic":  # its boxes answer for its size, as the File API's fields
            _, body = await get(harness, f"/imagesize/{handle}")
            assert json.loads(body) == {"width": width, "height": height}, case
        if kind.startswith(("jxl", "heic")):
            _, body = await get(harness, f"/resize=width:20/{handle}", 415)
            assert b"no decoder" in body, case
            await get(harness, f"/output=format:png/{handle}", 415)
            continue
        if declared != "text/plain":
            assert sides == {"width": width, "height": height}, case
        _, body = await get(harness, f"/imagesize/{handle}")
        assert json.loads(body) == {"width": width, "height": height}, case
        _, body = await get(harness, f"/resize=width:20/{handle}")
        assert decoded(body).width == 20, case


#: Accept headers that take neither WebP nor AVIF (older browsers, image fetchers, tools).
PLAIN_ACCEPTS = [
    "image/jpeg",
    "image/png,*/*",
    "*/*",
    "image/*",
    "text/html,*/*;q=0.8",
    "image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5",
    "image/avif;q=0,image/webp;q=0,*/*",
    None,
]


@pytest.mark.parametrize("seed", range(5036, 5039))
async def test_auto_image_for_a_client_taking_neither_webp_nor_avif_is_the_stored_file(
    harness: Harness, seed: int
) -> None:
    """The docs say: as if the task were absent. A job ran on the empty chain instead: a
    JPEG was compressed again (other bytes, less quality), and a GIF past the cost limit
    was refused where ``/<H>`` served it. The stored bytes now, with ``Vary: Accept``,
    and no job."""
    import random

    rng = random.Random(seed)
    for suffix in rng.sample([".jpg", ".png", ".gif", ".webp"], 3):
        handle = await stored(harness, picture(rng.randint(20, 400), rng.randint(20, 300), suffix))
        _, original = await get(harness, f"/{handle}")
        before = _jobs(await harness.metrics())
        for accept in rng.sample(PLAIN_ACCEPTS, 3):
            headers = {} if accept is None else {"Accept": accept}
            chain = rng.choice(["auto_image", "auto_image/auto_image", "cache=false/auto_image"])
            resp, body = await get(harness, f"/{chain}/{handle}", headers=headers)
            assert body == original, (suffix, accept, chain)
            assert "Accept" in resp.headers["Vary"]
        assert _jobs(await harness.metrics()) == before, suffix
