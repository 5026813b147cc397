"""Chain parsing and normalisation: the grammar, the option checks, hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import catalogue, chain
from stowage.processing.base import Task
from stowage.processing.table import Kind


def key(*segments: str) -> str:
    return chain.parse(list(segments)).key()


def test_option_order_does_not_matter() -> None:
    assert key("resize=width:300,height:200") == key("resize=height:200,width:300")
    assert key("resize=width:300,height:200") == "resize=height:200,width:300"


def test_task_order_does() -> None:
    assert key("flip", "rotate=deg:90") != key("rotate=deg:90", "flip")


def test_values() -> None:
    parsed = chain.parse_task("resize=width:300,align:[top,left],fit:CROP")
    assert parsed == Task("resize", (("align", ("top", "left")), ("fit", "crop"), ("width", 300)))
    assert chain.parse_task("crop=dim:[1,2,3,4]").get("dim") == (1, 2, 3, 4)
    assert chain.parse_task("output=compress:true,strip:false").get("strip") is False
    assert chain.parse_task("shadow=blur:2.5").get("blur") == 2.5  # the schema: a number
    assert chain.parse_task('store=path:"a/b,c/"').get("path") == "a/b,c/"


def test_aliases_and_bare_names() -> None:
    assert chain.parse_task("round_corners").name == "rounded_corners"
    assert chain.parse_task("flip") == Task("flip")


def test_store_keeps_the_chains_result_wherever_it_stands_and_imagesize_is_last() -> None:
    parsed = chain.parse(["resize=width:10", "store=filename:a.png"])
    assert parsed.store is not None and parsed.key() == "resize=width:10"
    first = chain.parse(["store=filename:a.png", "resize=width:10", "flip"])  # filestack-swift
    assert first.store == parsed.store and first.key() == "resize=width:10/flip"
    with pytest.raises(errors.InvalidParameter):
        chain.parse(["store", "flip", "store"])
    with pytest.raises(errors.InvalidParameter):
        chain.parse(["imagesize", "flip"])


def test_output_format_and_default() -> None:
    assert chain.output_for(chain.parse(["flip"]), "image/png").mimetype == "image/png"
    assert chain.output_for(chain.parse(["flip"]), "application/pdf").mimetype == "image/png"
    webp = chain.parse(["output=format:jpg", "output=format:webp"])
    assert chain.output_for(webp, "image/png").mimetype == "image/webp"
    assert chain.output_for(chain.parse(["imagesize"]), "image/png").format == "json"


def test_unsupported_task_lists_the_supported() -> None:
    with pytest.raises(errors.UnsupportedTask) as caught:
        chain.parse(["nonesuch=file:abc"])
    assert caught.value.status == 400
    assert "resize" in caught.value.details["supported"]


@pytest.mark.parametrize(
    ("segment", "option"),
    [
        ("resize=width:-1", "resize.width"),
        ("resize=width:nan", "resize.width"),
        ("resize=width:true", "resize.width"),
        ("resize=height:[1,2]", "resize.height"),
        ("resize=align:[top,left,right],width:1", "resize.align"),
        ("crop=dim:[[[1]]]", "crop.dim"),
        ("rotate=deg:exiff", "rotate.deg"),
        ("flip=x:1", "flip.x"),
        ("output=format:bmp", "output.format"),
        ("modulate=hue:360", "modulate.hue"),
        ("border=color:#ff0000", "border.color"),
        ("store=access:world", "store.access"),
        ("resize=width", "resize.width"),
    ],
)
def test_bad_options(segment: str, option: str) -> None:
    with pytest.raises(errors.InvalidParameter) as caught:
        chain.parse([segment])
    assert caught.value.details["parameter"] == option


def test_hostile_sizes() -> None:
    with pytest.raises(errors.InvalidParameter):
        chain.parse(["flip"] * 33)
    with pytest.raises(errors.InvalidParameter):
        chain.parse_task("crop=dim:" + "[" * 5000 + "]" * 5000)
    with pytest.raises(errors.InvalidParameter):
        chain.parse_task("crop=dim:" + "[" * 500 + "]" * 500)


@given(st.text(max_size=200))
def test_any_text_is_a_chain_or_a_400(text: str) -> None:
    try:
        parsed = chain.parse(text.split("/"))
    except errors.StowageError as exc:
        assert exc.status == 400
    else:
        assert chain.parse(parsed.key().split("/")).key() == parsed.key() or "/" in text


SEVERAL = ["collage=files:[AAAAAAAAAAAAAAAAAAAA],width:100,height:100", "animate", "zip"]
OTHERS = ["flip", "resize=width:50", "sepia", "output=format:png", "rotate=deg:90"]


@given(
    pair=st.lists(st.sampled_from(SEVERAL), min_size=2, max_size=2),
    others=st.lists(st.sampled_from(OTHERS), max_size=3),
    data=st.data(),
)
def test_one_task_of_several_files_per_chain(
    pair: list[str], others: list[str], data: st.DataObject
) -> None:
    """The engine builds one collage or animation; a second one was dropped without a
    word (``collage=…/animate=width:100`` gave the collage, unresized)."""
    segments = list(others)
    for segment in pair:
        segments.insert(data.draw(st.integers(0, len(segments))), segment)
    with pytest.raises(errors.InvalidParameter):
        chain.parse(segments)


def _answering() -> list[str]:
    """Every task that answers something other than the image, as the catalogue says, and
    the two options that make an image task answer JSON."""
    bare = [
        name
        for name, spec in catalogue.TABLE.items()
        if spec.kind is Kind.ANSWER and not spec.needs_one_of and not spec.unavailable
    ]
    return [*bare, "pdfconvert=pages:[1]", "detect_faces=export:true", "output=docinfo:true"]


@given(
    answering=st.sampled_from(_answering()),
    before=st.lists(st.sampled_from(OTHERS), max_size=2),
    after=st.lists(st.sampled_from(OTHERS), min_size=1, max_size=2),
)
def test_a_task_that_answers_is_the_last_or_a_400(
    answering: str, before: list[str], after: list[str]
) -> None:
    """An answer followed by image tasks was dropped without a word, and the picture sent
    (``output=docinfo:true/negative``, ``detect_faces=export:true/flip``)."""
    last = chain.parse([*before, answering])
    assert last.tasks[-1] == chain.parse_task(answering)
    with pytest.raises(errors.InvalidParameter, match="must be the last task"):
        chain.parse([*before, answering, *after])
