"""Effects' pixels against their definitions, on generated colours (probe fx: redeye,
modulate, sepia, polaroid, rounded_corners, lossy WebP under alpha 0)."""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import numpy as np
import pyvips

from stowage.processing import chain, colour, effects, faces, geometry, shapes, subjects
from stowage.processing.base import Task, Value
from stowage.processing.vips import VipsEngine
from tests.processing.test_engine import LIMITS

ASTRONAUT = Path(str(resources.files("skimage") / "data")) / "astronaut.png"


def task(name: str, **options: Value) -> Task:
    return Task(name, tuple(sorted(options.items())))


def image_of(pixels: np.ndarray) -> pyvips.Image:
    """A uchar image of an (h, w, bands) array."""
    height, width, bands = pixels.shape
    raw = np.ascontiguousarray(pixels, dtype=np.uint8).tobytes()
    image = pyvips.Image.new_from_memory(raw, width, height, bands, "uchar")
    return image.copy(interpretation="srgb" if bands >= 3 else "b-w")


def array_of(image: pyvips.Image) -> np.ndarray:
    data = np.frombuffer(image.cast("uchar").write_to_memory(), dtype=np.uint8)
    return data.reshape(image.height, image.width, image.bands).astype(np.int32)


def colours(seed: int, count: int = 4096) -> np.ndarray:
    """``count`` random sRGB colours as a 64-wide strip."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (count // 64, 64, 3))


def warm(seed: int, count: int = 4096) -> np.ndarray:
    """Skin, brown, tan and orange colours (hue 0-60 degrees, red under twice green:
    not a saturated red), dark to light: what is in and around an eye without red eye."""
    rng = np.random.default_rng(seed)
    red = rng.integers(20, 256, count)
    green = np.ceil(red * rng.uniform(0.5, 1.0, count)).astype(int)
    blue = (green * rng.uniform(0.0, 1.0, count)).astype(int)
    return np.stack([red, green, blue], axis=-1).reshape(count // 64, 64, 3)


# -- redeye ---------------------------------------------------------------------
def test_redeye_leaves_skin_brown_and_orange_unchanged() -> None:
    """R > 1.5 x mean(G, B) took every warm brown for a red eye and set its red alone
    to that mean: brown irises and brows turned green."""
    for seed in range(6001, 6006):
        pixels = warm(seed)
        assert (array_of(subjects.unreddened(image_of(pixels))) == pixels).all()
    photo = pyvips.Image.new_from_file(str(ASTRONAUT)).copy_memory()  # no red eye in it
    assert (array_of(subjects.redeye(photo, task("redeye"))) == array_of(photo)).all()


def test_redeye_makes_red_pupils_dark_and_neutral() -> None:
    rng = np.random.default_rng(6010)
    red = rng.integers(100, 256, 4096)
    green = (red * rng.uniform(0, 0.35, 4096)).astype(int)
    blue = np.clip(green + rng.integers(-8, 9, 4096), 0, 255)
    pixels = np.stack([red, green, blue], axis=-1).reshape(64, 64, 3)
    fixed = array_of(subjects.unreddened(image_of(pixels)))
    assert (fixed.max(axis=2) - fixed.min(axis=2)).max() == 0  # grey: no cast
    assert (fixed[..., 0] <= pixels[..., 1:].max(axis=2)).all()  # dark as the pupil's G, B
    with_alpha = image_of(np.dstack([pixels, np.full((64, 64), 77)]))
    assert (array_of(subjects.unreddened(with_alpha))[..., 3] == 77).all()


def test_redeye_on_a_photo_darkens_red_pupils_in_the_eyes_found_only() -> None:
    """Red pupils of generated reds painted in the eyes the finder gives come out neutral
    and dark; every other pixel is unchanged."""
    photo = pyvips.Image.new_from_file(str(ASTRONAUT)).copy_memory()
    eyes = faces.eyes(photo, faces.detect(photo)[0])
    rng = np.random.default_rng(6011)
    for _ in range(3):
        red = photo.copy()
        for eye in eyes:
            ink = [int(rng.integers(150, 256)), int(rng.integers(0, 40)), int(rng.integers(0, 40))]
            red = red.draw_circle(ink, *eye.centre, max(2, eye.width // 6), fill=True)
        before = array_of(red.copy_memory())
        painted = (before != array_of(photo)).any(axis=2)
        after = array_of(subjects.redeye(red, task("redeye")))
        assert (after[~painted] == before[~painted]).all()
        pupil = after[painted]
        assert len(pupil) and (pupil.max(axis=1) - pupil.min(axis=1)).max() == 0
        assert pupil.max() < 40


# -- modulate -------------------------------------------------------------------
def modulated(pixels: np.ndarray, **options: Value) -> np.ndarray:
    return array_of(colour.modulate(image_of(pixels), task("modulate", **options)))


def test_modulate_brightness_zero_is_black_and_100_unchanged() -> None:
    """L was scaled and chroma kept: brightness 0 gave (0, 0, 61) for (93, 123, 195)."""
    for seed in (6020, 6021):
        pixels = colours(seed)
        assert modulated(pixels, brightness=0).max() == 0
        assert np.abs(modulated(pixels) - pixels).max() <= 1
        assert np.abs(modulated(pixels, hue=0, saturation=100) - pixels).max() <= 1
        greys = modulated(pixels, saturation=0)
        assert (greys.max(axis=2) - greys.min(axis=2)).max() <= 2
        darker = modulated(pixels, brightness=10)
        luma = np.array([0.299, 0.587, 0.114])
        assert (darker @ luma <= pixels @ luma + 1).all() and darker.max() <= 60
        # lowering brightness keeps the hue: the channels keep their order
        half = modulated(pixels, brightness=50)
        spread = pixels.max(axis=2) - pixels.min(axis=2)
        chromatic = spread > 60
        assert (half.argmax(axis=2) == pixels.argmax(axis=2))[chromatic].mean() > 0.97
        assert (modulated(pixels, brightness=10_000).max(axis=2) == 255).all()
        assert modulated(pixels, saturation=10_000, hue=359).shape == pixels.shape


# -- sepia ----------------------------------------------------------------------
SEPIA = np.array([[0.393, 0.769, 0.189], [0.349, 0.686, 0.168], [0.272, 0.534, 0.131]])


def test_sepia_is_the_clipped_sepia_blended_with_the_original_by_tone() -> None:
    """The unclipped sepia (red up to 345) was blended: tone 50 was brighter than the
    mean of the original and the tone-100 result, by up to 29 levels."""
    for seed, tone in ((6030, 0), (6031, 25), (6032, 50), (6033, 80), (6034, 100)):
        pixels = colours(seed)
        full = np.clip(pixels @ SEPIA.T, 0, 255)
        want = full * tone / 100 + pixels * (1 - tone / 100)
        got = array_of(colour.sepia(image_of(pixels), task("sepia", tone=tone)))
        assert np.abs(got - want).max() <= 1, tone


# -- rotate and polaroid's turn -------------------------------------------------
def noise(seed: int, width: int, height: int, bands: int = 3) -> pyvips.Image:
    rng = np.random.default_rng(seed)
    return image_of(rng.integers(0, 256, (height, width, bands)))


def off_centre(image: pyvips.Image) -> tuple[float, float]:
    """How far the centre of mass of ``image``'s alpha is from the image's centre."""
    alpha = array_of(image)[..., -1].astype(float)
    ys, xs = np.mgrid[0 : image.height, 0 : image.width]
    total = alpha.sum()
    x = (alpha * xs).sum() / total - (image.width - 1) / 2
    y = (alpha * ys).sum() / total - (image.height - 1) / 2
    return x, y


def test_polaroid_right_angles_are_exact_turns_of_the_print() -> None:
    """libvips' interpolating rotate was used for 90/180/270 too: the print moved 1 px,
    a background strip on one side, the frame cut on the other."""
    for seed, (width, height) in zip(
        range(6040, 6046), ((97, 61), (1, 1), (1, 17), (40, 30), (64, 48), (17, 1)), strict=True
    ):
        image = noise(seed, width, height)
        flat = array_of(effects.polaroid(image, task("polaroid")))
        for deg in (90, 180, 270):
            turned = effects.polaroid(image, task("polaroid", rotate=deg))
            assert (array_of(turned) == np.rot90(flat, k=-deg // 90)).all(), (seed, deg)


def test_turns_at_other_angles_stay_centred() -> None:
    """The turned picture sat up to 1.5 px off the box's centre (rotate=deg:135 of a
    300x200 image: +1.47 px, an empty column on the left)."""
    rng = np.random.default_rng(6050)
    for _ in range(24):
        width, height = (int(v) for v in rng.integers(8, 160, 2))
        deg = int(rng.integers(1, 360))
        image = image_of(np.full((height, width, 3), 200))
        rotated = geometry.rotate(image, task("rotate", deg=deg, background="transparent"))
        assert (rotated.width, rotated.height) == geometry.rotated_size(width, height, deg)
        framed = effects.polaroid(image, task("polaroid", rotate=deg, background="transparent"))
        for result in (rotated, framed):
            x, y = off_centre(result)
            assert abs(x) <= 0.5 and abs(y) <= 0.5, (width, height, deg, x, y)


# -- rounded_corners ------------------------------------------------------------
def corner_alpha(width: int, height: int, **options: Value) -> np.ndarray:
    image = image_of(np.full((height, width, 3), 128))
    return array_of(shapes.rounded_corners(image, task("rounded_corners", **options)))[..., 3]


def test_rounded_corners_soften_only_the_corners_at_every_size() -> None:
    """Past the image's edges the mask was extended by copying, so a quarter plane of 0
    lay beyond each corner, and the blur pulled it along both edges and into the middle
    of a small image (40x30, radius 3, blur 20: centre alpha 223, left edge 197). Only
    the cut-off beyond each arc (r x r x (1 - pi/4)) is transparent now: nothing is
    more transparent than those areas, blurred, allow; and each corner's fade is the
    same on a small image (the whole mask) as on a large one (the corner tiles)."""
    rng = np.random.default_rng(6060)
    for _ in range(30):
        r = int(rng.integers(1, 30))
        blur = float(rng.choice([0.3, 2.5, 8.0, 20.0]))
        _, _, side = shapes.corner_tile(task("rounded_corners", radius=r, blur=blur), 10**4, 10**4)
        width, height = (int(v) for v in rng.integers(2 * r, 2 * side + 20, 2))
        small = corner_alpha(width, height, radius=r, blur=blur)
        # each cut-off and its mirror images, 4 per corner, under the kernel's peak
        peak = 1.3 / (2 * math.pi * blur**2)
        allowed = 255 * 16 * r * r * (1 - math.pi / 4) * peak + 1
        assert 255 - small.min() <= allowed, (width, height, r, blur)
        large = corner_alpha(width + 3 * side, height + 3 * side, radius=r, blur=blur)
        deficit = 255 - large[:height, :width].astype(int)
        summed = deficit + deficit[:, ::-1] + deficit[::-1] + deficit[::-1, ::-1]
        assert np.abs((255 - small) - summed).max() <= 2, (width, height, r, blur)
    for width, height in ((40, 30), (64, 48), (97, 61)):
        assert corner_alpha(width, height, radius=3, blur=20).min() >= 253


# -- lossy saves of what alpha 0 hides ----------------------------------------------
def test_lossy_webp_and_avif_depend_only_on_what_is_shown(tmp_path: Path) -> None:
    """libwebp's 4:2:0 colour mixed the colour under alpha 0 into the visible edge: a
    blue square on transparent red came out edged in purple, and not as on transparent
    black (85 pixels more than 10 levels apart, at quality 100 too)."""
    rng = np.random.default_rng(6070)
    chains = (["output=format:webp"], ["flip", "output=format:webp,quality:100"])
    chains += (["resize=width:41", "output=format:webp"], ["output=format:avif"])
    for case in range(4):
        width, height = (int(v) for v in rng.integers(8, 90, 2))
        shown = rng.integers(0, 256, (height, width, 4))
        blocks = rng.integers(0, 2, (height // 7 + 1, width // 7 + 1)).repeat(7, 0).repeat(7, 1)
        shown[..., 3] = np.where(
            blocks[:height, :width] == 1, 0, rng.integers(1, 256, (height, width))
        )
        hidden = shown.copy()
        clear = shown[..., 3] == 0
        hidden[clear, :3] = rng.integers(0, 256, (int(clear.sum()), 3))
        paths = []
        for name, pixels in (("a", shown), ("b", hidden)):
            path = tmp_path / f"{case}{name}.png"
            image_of(pixels).pngsave(str(path))
            paths.append(path)
        for segments in chains:
            parsed = chain.parse(segments)
            output = chain.output_for(parsed, "image/png")
            results = []
            for path in paths:
                dest = path.with_suffix(f".{len(results)}.{output.extension}")
                VipsEngine(threads_per_job=1).render(path, parsed, output, dest, LIMITS)
                results.append(dest.read_bytes())
            assert results[0] == results[1], (case, segments)
