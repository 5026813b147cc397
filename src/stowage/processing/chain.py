"""Task chains as the engine takes them: parsed by the one grammar (``grammar``),
checked against the task table, and normalised.

    resize=width:300,fit:crop,align:[top,left]/rotate=deg:90/flip/output=format:webp

Options are sorted in the normalised key, and short names are read as the long ones,
so ``resize=h:200,width:300`` and ``resize=width:300,height:200`` are one chain (one
cached derivative). Request tasks other than ``store`` (``security``, ``cache``) are
about the request, not the result: they are not part of the chain.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Awaitable, Callable
from typing import TypeVar

from stowage import errors
from stowage.processing import autoimage, catalogue, documents, grammar, officeformats
from stowage.processing.base import Chain, Output, Task
from stowage.processing.table import Answer, Kind

MAX_TASKS = 32
SUPPORTED = catalogue.SUPPORTED
_OUTPUTS = {
    "jpg": Output("jpeg", "image/jpeg", "jpg"),
    "pjpg": Output("jpeg", "image/jpeg", "jpg"),  # saved progressive (vips.save_options)
    "png": Output("png", "image/png", "png"),
    "webp": Output("webp", "image/webp", "webp"),
    "avif": Output("avif", "image/avif", "avif"),
    "gif": Output("gif", "image/gif", "gif"),
    "tiff": Output("tiff", "image/tiff", "tiff"),
    "svg": Output("svg", "image/svg+xml", "svg"),  # a PNG inside an SVG (svgout.py)
}
_BY_MIMETYPE = {
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
    "image/avif": "avif",
    "image/gif": "gif",
    "image/tiff": "tiff",
    # Names some uploaders and stores give these formats: the input's format all the same.
    "image/jpg": "jpg",
    "image/pjpeg": "jpg",
    "image/x-png": "png",
    "image/x-tiff": "tiff",
}
JSON = Output("json", "application/json", "json")
T = TypeVar("T")
parse_task = grammar.parse_task  # one task: the grammar's


def parse(segments: list[str]) -> Chain:
    """``segments``: the task parts of a path, percent-decoded, left to right."""
    return _parse(tuple(segments))


@functools.lru_cache(maxsize=1024)  # a warm derivative's chain is parsed once, not per hit
def _parse(segments: tuple[str, ...]) -> Chain:
    if len(segments) > MAX_TASKS:
        raise errors.InvalidParameter(f"at most {MAX_TASKS} tasks in one chain")
    parsed = [grammar.parse_task(segment) for segment in segments]
    kinds = [catalogue.TABLE[t.name].kind for t in parsed]
    store = [t for t in parsed if t.name == "store"]
    image = tuple(t for t, kind in zip(parsed, kinds, strict=True) if kind is not Kind.REQUEST)
    for once in ("store", "fallback"):  # anywhere, once: a second would be dropped unread
        if sum(t.name == once for t in parsed) > 1:
            raise errors.InvalidParameter(f"{once} appears once in a chain", parameter=once)
    answers = [t for t in image if _answers(t)]
    if answers and (len(answers) > 1 or image[-1] is not answers[0]):
        name = answers[0].name
        raise errors.InvalidParameter(f"{name} must be the last task", parameter=name)
    several = [t.name for t in image if catalogue.TABLE[t.name].kind is Kind.FILES]
    if len(several) > 1:  # the engine builds one; a second would be dropped without a word
        raise errors.InvalidParameter(
            f"{several[1]}: one task of several files (collage, animate, zip) in a chain",
            parameter=several[1],
        )
    texts = [t.name for t in image if catalogue.TABLE[t.name].kind is Kind.TEXT]
    if texts and len(image) > 1:
        raise errors.InvalidParameter(f"{texts[0]} takes no other task", parameter=texts[0])
    chain = Chain(image, store[0] if store else None, _format(image))
    if store and answers and not _a_file(chain):
        raise errors.InvalidParameter(f"{answers[0].name} answers JSON; it cannot be stored")
    return chain


def _a_file(chain: Chain) -> bool:
    """Whether the chain's answer is a file a store keeps (pdfconvert's and pdfcreate's
    PDF, ascii's page), not JSON (imagesize, doc_to_images, pdfinfo, ...)."""
    answer = answer_of(chain)
    output = answer.output if answer is not None else documents.output_of(chain)
    return output is not None and output.mimetype != JSON.mimetype


_answers = autoimage.answers


def _format(tasks: tuple[Task, ...]) -> str | None:
    """The last format asked for: ``output=format:X``, the ``pjpg`` task, or the AVIF
    ``auto_image`` chose."""
    last = _format_task(tasks)
    if last is None:
        return None
    return "pjpg" if last.name == "pjpg" else str(last.get("format")).replace("jpeg", "jpg")


def _format_task(tasks: tuple[Task, ...]) -> Task | None:
    """The last task that chooses the result's format."""
    choosing = [
        t
        for t in tasks
        if t.name == "pjpg" or (t.name in ("output", "auto_image") and t.get("format"))
    ]
    return choosing[-1] if choosing else None


def lighter_than_avif(chain: Chain, input_mimetype: str) -> Chain | None:
    """The chain with ``auto_image``'s AVIF replaced by what the client also takes (its
    ``or``: WebP) or by the input's format, when AVIF is the result's format; else None.
    AVIF costs several times WebP to make: a 20-megapixel photo was refused to browsers
    that take AVIF and answered to those that take only WebP."""
    last = _format_task(chain.tasks)
    if last is None or last.name != "auto_image":
        return None
    also = last.get("or")
    instead = (Task("output", (("format", also),)),) if also is not None else ()
    tasks = tuple(made for t in chain.tasks for made in (instead if t is last else (t,)))
    lighter = dataclasses.replace(chain, tasks=tasks, output_format=_format(tasks))
    if made_output(lighter, input_mimetype) == made_output(chain, input_mimetype):
        return None  # an animation: WebP already
    return lighter


class CostlyAvifs:
    """The last ``size`` results (a file version's chain) whose AVIF was refused as too
    costly: asked again, the lighter chain is made or read at once. Each request had cost
    a job's refusal from the header first (a round trip to a job process)."""

    def __init__(self, size: int = 4096) -> None:
        self._keys: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._size = size

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def add(self, key: str) -> None:
        self._keys[key] = None
        if len(self._keys) > self._size:
            self._keys.popitem(last=False)


async def avif_or_lighter(
    chain: Chain,
    input_mimetype: str,
    attempt: Callable[[Chain], Awaitable[T]],
    costly: CostlyAvifs | None = None,
    key: str = "",
) -> T:
    """``attempt(chain)``; when its AVIF is refused as too costly, ``attempt`` of the
    chain the client also takes, and at once when ``costly`` holds ``key`` (that result's
    AVIF was refused before). The answer still varies with Accept, as it did."""
    known = costly is not None and key in costly
    lighter = lighter_than_avif(chain, input_mimetype) if known else None
    if lighter is not None:
        return await attempt(lighter)
    try:
        return await attempt(chain)
    except errors.ProcessingTooCostly:
        lighter = lighter_than_avif(chain, input_mimetype)
        if lighter is None:
            raise
        if costly is not None:
            costly.add(key)
        return await attempt(lighter)


def answer_of(chain: Chain) -> Answer | None:
    """The declared answer of the chain's last task, when that task answers text."""
    if not chain.tasks:
        return None
    last = chain.tasks[-1]
    found = catalogue.TABLE[last.name].answer
    return found if found is not None and found.when(last) else None


def output_for(chain: Chain, input_mimetype: str) -> Output:
    if chain.wants_size:
        return JSON
    answer = answer_of(chain)
    if answer is not None:
        return answer.output
    document = documents.output_of(chain)  # pdfinfo, pdfconvert
    if document is not None:
        return document
    fmt = chain.output_format or _BY_MIMETYPE.get(input_mimetype.split(";")[0].lower(), "png")
    return _OUTPUTS.get(fmt) or officeformats.OUTPUTS[fmt]


def named_handles(chain: Chain) -> list[str]:
    """Handles the chain's tasks name: watermark's file, collage's files."""
    named: list[str] = []
    for task in chain.tasks:
        value = task.get("file") if task.name == "watermark" else task.get("files")
        if task.name in ("watermark", "collage") and value is not None:
            named += [str(v) for v in value] if isinstance(value, tuple) else [str(value)]
    return named


def made_output(chain: Chain, input_mimetype: str) -> Output:
    """``output_for``, but ``animate`` makes a GIF unless the chain asks for a format (a
    still one, JPEG or PNG, holds its first frame), and an AVIF that ``auto_image`` chose
    is, for an animation or a GIF or WebP source (libvips writes AVIF as a still), the
    WebP the client also takes, else the format the chain would have without it."""
    animate = any(t.name == "animate" for t in chain.tasks)
    animated = animate or input_mimetype.split(";")[0].lower() in _ANIMATED
    chooser = _format_task(chain.tasks)
    if animated and chooser is not None and chooser.name == "auto_image":
        also = chooser.get("or")  # WebP when the client takes it, else as if not asked
        chain = dataclasses.replace(chain, output_format=None if also is None else str(also))
    if animate and chain.output_format is None:
        return output_for(dataclasses.replace(chain, output_format="gif"), "image/gif")
    return output_for(chain, input_mimetype)


_ANIMATED = frozenset({"image/gif", "image/webp"})  # the inputs that may be animations
