"""A chain's validity does not depend on the client's ``Accept``: ``auto_image`` after a
task that answers something other than an image (``imagesize/auto_image``) was 200 for
``*/*`` (auto_image removed) and 400 "must be the last task" for a browser taking WebP or
AVIF (auto_image replaced by an ``output``); ``auto_image/minify_css`` likewise ("takes no
other task"). In a chain that answers no image auto_image has no effect: it is dropped
for every Accept and the answer does not vary (docs/decisions.md). Generated chains x
Accept headers (seeds 5104, 5105): the same outcome, answer or error, for every Accept."""

from __future__ import annotations

import random

import pytest

from stowage import errors
from stowage.processing import autoimage, catalogue, chain

ACCEPTS = (
    None,
    "*/*",
    "image/webp",
    "image/avif,image/webp",
    "image/avif",
    "text/html,image/webp,*/*;q=0.8",
    "image/png",
)
#: Tasks answering no image, spelled as an SDK does.
ANSWERING = (
    "imagesize",
    "metadata",
    "metadata=params:[width,height]",
    "ascii",
    "ascii=size:20",
    "detect_faces=export:true",
    "output=docinfo:true",
    "pdfinfo",
    "doc_to_images",
    "minify_css",
    "minify_js",
    "ocr",
    "tags",
)
PICTURE = (
    "resize=width:50",
    "flip",
    "rotate=deg:90",
    "quality=value:50",
    "output=format:png",
    "blur=amount:2",
    "detect_faces",
    "compress",
    "cache=false",
    "store",
)
EVERY_NAME = tuple(sorted(catalogue.TABLE))  # bare, valid or not: an error is an outcome too


def _outcome(tasks: list[str], accept: str | None) -> tuple[str, ...]:
    try:
        negotiated, _ = autoimage.negotiated(list(tasks), accept)
        chain.parse([t for t in negotiated])
    except errors.StowageError as exc:
        return (type(exc).__name__, str(exc))
    return ("ok",)


def _chain(rng: random.Random) -> list[str]:
    pool = [*ANSWERING, *PICTURE, *rng.sample(EVERY_NAME, 3)]
    tasks = rng.sample(pool, rng.randint(0, 3))
    for _ in range(rng.randint(1, 2)):
        tasks.insert(rng.randint(0, len(tasks)), rng.choice(["auto_image", "auto_image=or:webp"]))
    return tasks


@pytest.mark.parametrize("seed", [5104, 5105])
def test_a_chains_outcome_is_the_same_for_every_accept(seed: int) -> None:
    rng = random.Random(seed)
    chains = [[a, "auto_image"] for a in ANSWERING] + [["auto_image", a] for a in ANSWERING]
    chains += [_chain(rng) for _ in range(600)]
    accepted = 0
    for tasks in chains:
        outcomes = {accept: _outcome(tasks, accept) for accept in ACCEPTS}
        assert len(set(outcomes.values())) == 1, (tasks, outcomes)
        accepted += outcomes[None] == ("ok",)
    assert accepted > 100, accepted  # the chains are mostly valid ones


@pytest.mark.parametrize("answer", ANSWERING)
def test_auto_image_in_a_chain_that_answers_no_image_is_dropped(answer: str) -> None:
    for tasks in ([answer, "auto_image"], ["auto_image", answer], ["flip", answer, "auto_image"]):
        for accept in ACCEPTS:
            found, varies = autoimage.negotiated(list(tasks), accept)
            assert found == [t for t in tasks if t != "auto_image"], (tasks, accept)
            assert varies is False, (tasks, accept)


def test_an_image_answer_still_varies() -> None:
    assert autoimage.negotiated(["flip", "auto_image"], "image/webp") == (
        ["flip", "output=format:webp"],
        True,
    )
    assert autoimage.negotiated(["auto_image"], "*/*") == ([], True)
