"""The spellings saved URLs and the SDKs use (issue 23): short parameter names, quoted
values, cache=expiry:max and e:N, zero amounts that change nothing, progressive JPEG
(pjpg as a format and as a task), tasks in any order, and align:faces."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import pyvips

from stowage import errors
from stowage.processing import chain, geometry, grammar, params
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(
    max_input_pixels=50_000_000, max_input_bytes=10**9, max_output_dimension=4000, seconds=10
)
H = "A" * 20


def rendered(tmp_path: Path, source: Path, path: str, mimetype: str) -> pyvips.Image:
    parsed = chain.parse(grammar.parse_path(path).tasks)
    output = chain.output_for(parsed, mimetype)
    dest = tmp_path / f"out.{output.extension}"
    VipsEngine().render(source, parsed, output, dest, LIMITS)
    return pyvips.Image.new_from_file(str(dest))


def picture(path: Path, width: int, height: int) -> Path:
    xy = pyvips.Image.xyz(width, height)
    image = (xy[0] * 7 % 256).bandjoin([xy[1] * 3 % 256, (xy[0] + xy[1]) % 256]).cast("uchar")
    if path.suffix == ".png":
        image.pngsave(str(path))
    else:
        image.jpegsave(str(path), Q=90)
    return path


@pytest.mark.parametrize(
    ("short", "long"),
    [
        ("resize=w:640,h:386,f:crop,a:faces", "resize=width:640,height:386,fit:crop,align:faces"),
        ("output=q:60,f:pjpg", "output=quality:60,format:pjpg"),
        ("crop=d:[1,2,3,4]", "crop=dim:[1,2,3,4]"),
        ("rotate=d:90,b:red,e:true", "rotate=deg:90,background:red,exif:true"),
        ('rotate=deg:"exif"', "rotate=deg:exif"),
        ('resize=width:"300"', "resize=width:300"),
        ("border=w:3,c:red,b:white", "border=width:3,color:red,background:white"),
        ("blur=a:3", "blur=amount:3"),
        ("modulate=b:90,h:30,s:120", "modulate=brightness:90,hue:30,saturation:120"),
        ("quality=v:70", "quality=value:70"),
        ("pjpg=q:70", "pjpg=quality:70"),
    ],
)
def test_short_names_are_the_long_ones(short: str, long: str) -> None:
    assert chain.parse([short]).key() == chain.parse([long]).key()


def test_request_tasks_in_short_spellings() -> None:
    path = grammar.parse_path(f"/cache=e:600/security=p:PPP,s:SSS/flip/{H}")
    assert (path.max_age, path.policy, path.signature, path.tasks) == (600, "PPP", "SSS", ["flip"])
    assert grammar.parse_path(f"/cache=expiry:max/{H}").max_age == 31_536_000


def test_the_hosted_example_with_short_names_and_pjpg(tmp_path: Path) -> None:
    source = picture(tmp_path / "in.jpg", 1200, 900)
    path = f"/resize=w:640,h:386,f:crop,a:faces/output=q:60,f:pjpg/compress/{H}"
    image = rendered(tmp_path, source, path, "image/jpeg")
    assert (image.width, image.height) == (640, 386)
    data = (tmp_path / "out.jpg").read_bytes()
    assert data[:2] == b"\xff\xd8" and b"\xff\xc2" in data  # SOF2: progressive


def test_pjpg_as_a_task(tmp_path: Path) -> None:
    source = picture(tmp_path / "in.png", 300, 200)
    rendered(tmp_path, source, f"/pjpg/{H}", "image/png")
    data = (tmp_path / "out.jpg").read_bytes()
    assert b"\xff\xc2" in data and b"\xff\xc0" not in data
    rendered(tmp_path, source, f"/output=format:jpg/{H}", "image/png")
    assert b"\xff\xc2" not in (tmp_path / "out.jpg").read_bytes()  # baseline stays baseline


def test_tasks_in_the_order_saved_urls_have_them(tmp_path: Path) -> None:
    source = picture(tmp_path / "in.jpg", 1200, 800)
    path = f"/compress/output=format:webp/cache=expiry:max/resize=width:936/{H}"
    assert grammar.parse_path(path).max_age == 31_536_000
    image = rendered(tmp_path, source, path, "image/jpeg")
    assert (image.width, image.height) == (936, 624)
    assert image.get("vips-loader") == "webpload"


@pytest.mark.parametrize("task", ["sharpen=amount:0", "blur=amount:0", "border=width:0"])
def test_zero_changes_nothing(tmp_path: Path, task: str) -> None:
    source = picture(tmp_path / "in.png", 64, 48)
    image = rendered(tmp_path, source, f"/{task}/{H}", "image/png")
    original = pyvips.Image.new_from_file(str(source))
    assert (image.width, image.height) == (64, 48)
    assert (image - original).abs().max() == 0
    if "width" not in task:  # a positive amount does change the pixels
        changed = rendered(tmp_path, source, f"/{task.replace(':0', ':3')}/{H}", "image/png")
        assert (changed - original).abs().max() > 0


def test_align_faces_is_parsed_and_uses_the_face_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = picture(tmp_path / "in.png", 400, 200)
    faces = rendered(tmp_path, source, f"/resize=w:100,h:100,f:crop,a:faces/{H}", "image/png")
    center = rendered(tmp_path, source, f"/resize=w:100,h:100,f:crop,a:center/{H}", "image/png")
    assert (faces - center).abs().max() == 0  # no face finder yet: the center
    monkeypatch.setattr(geometry, "face_anchor", lambda image, w, h, seen=None: (0, 0))
    faces = rendered(tmp_path, source, f"/resize=w:100,h:100,f:crop,a:faces/{H}", "image/png")
    left = rendered(tmp_path, source, f"/resize=w:100,h:100,f:crop,a:left/{H}", "image/png")
    assert (faces - left).abs().max() == 0


@pytest.mark.parametrize("fmt", ["png", "tiff", "webp", "jpg"])
def test_a_result_over_the_byte_limit_is_refused(tmp_path: Path, fmt: str) -> None:
    source = picture(tmp_path / "in.png", 600, 400)
    parsed = chain.parse(["flip", f"output=format:{fmt}"])
    output = chain.output_for(parsed, "image/png")
    dest = tmp_path / f"out.{output.extension}"
    VipsEngine().render(source, parsed, output, dest, LIMITS)
    size = dest.stat().st_size
    capped = dataclasses.replace(LIMITS, max_output_bytes=size - 1)
    with pytest.raises(errors.ImageTooLarge):
        VipsEngine().render(source, parsed, output, dest, capped)
    assert not dest.exists()  # nothing of the refused result is left
    exact = dataclasses.replace(LIMITS, max_output_bytes=size)
    VipsEngine().render(source, parsed, output, dest, exact)
    assert dest.stat().st_size == size


@pytest.mark.parametrize(
    ("name", "rgba"),
    [
        ("lightgray", (211, 211, 211, 255)),
        ("gray50", (127, 127, 127, 255)),
        ("gray0", (0, 0, 0, 255)),
        ("gray100", (255, 255, 255, 255)),
        ("rebeccapurple", (102, 51, 153, 255)),
        ("none", (0, 0, 0, 0)),
        ("FF8000", (255, 128, 0, 255)),
    ],
)
def test_colors_by_the_names_the_js_schema_lists(name: str, rgba: tuple[int, ...]) -> None:
    task = chain.parse_task(f"border=color:{name}")
    assert params.rgba(str(task.get("color"))) == rgba


def test_every_color_name_of_the_js_schema_is_known() -> None:
    schema = (
        Path(__file__).resolve().parents[2]
        / ".test-servers/filestack-js/node_modules/filestack-js/src/schema/definitions.schema.ts"
    ).read_text()
    listed = re.search(r"enum: \['aliceblue'[^\]]*\]", schema)
    assert listed is not None
    names = set(re.findall(r"'([a-z0-9]+)'", listed.group(0))) - {"fractal"}
    assert names <= set(params.COLOR_NAMES), names - set(params.COLOR_NAMES)


def test_the_page_decoded_is_the_page_checked(tmp_path: Path) -> None:
    """A 2-page TIFF whose first page is over the pixel limit: page 2 is what is read,
    also when the chain starts with a resize that shrinks on load."""
    from PIL import Image

    source = tmp_path / "pages.tif"
    first, second = Image.new("RGB", (3000, 3000), "red"), Image.new("RGB", (40, 20), "blue")
    first.save(source, save_all=True, append_images=[second])
    small = dataclasses.replace(LIMITS, max_input_pixels=1_000_000)
    parsed = chain.parse(["output=page:2,format:png", "resize=width:10"])
    output = chain.output_for(parsed, "image/tiff")
    dest = tmp_path / "out.png"
    VipsEngine().render(source, parsed, output, dest, small)
    image = pyvips.Image.new_from_file(str(dest))
    assert (image.width, image.height) == (10, 5)  # page 2's shape, not page 1's square
    assert image.getpoint(5, 2)[2] > 200 and image.getpoint(5, 2)[0] < 50  # and its blue
    with pytest.raises(errors.ImageTooLarge):  # page 1 itself is refused
        VipsEngine().render(source, chain.parse(["resize=width:10"]), output, dest, small)


UPRIGHT, ACROSS = ("top", "bottom", "center", "middle"), ("left", "right", "center", "middle")
POSITIONED = [
    "resize=width:40,height:40,fit:crop,align:{}",
    "watermark=file:" + "B" * 20 + ",position:{}",
    "animate=width:40,height:40,align:{}",
]


@pytest.mark.parametrize("task", POSITIONED)
@pytest.mark.parametrize("vertical", UPRIGHT)
@pytest.mark.parametrize("horizontal", ACROSS)
def test_a_position_pair_is_one_position_in_either_order(
    task: str, vertical: str, horizontal: str
) -> None:
    """filestack-js writes ``[vertical, horizontal]``; hand-written URLs swap them. Both
    orders are one position, one chain key (one derivative)."""
    keys = {
        chain.parse([task.format(f"[{a},{b}]")]).key()
        for a, b in ((vertical, horizontal), (horizontal, vertical))
    }
    assert len(keys) == 1


@pytest.mark.parametrize("task", POSITIONED)
@pytest.mark.parametrize(
    "pair", ["[top,bottom]", "[left,right]", "[top,top]", "[right,right]", "[faces,left]"]
)
def test_a_pair_that_contradicts_itself_is_refused(task: str, pair: str) -> None:
    with pytest.raises(errors.InvalidParameter):
        chain.parse([task.format(pair)])
