"""Every parameter alias ("short name") Stowage takes, held here as data, task by task:
each is read by the URL grammar as its long name, and its value reaches the operation
under the long name. The table and the task table must agree both ways, so that a short
name added to a ``Param`` is pinned here with the documentation it comes from.

Sources (the hosted Processing API's "Name (Alias)" column): the stored copies of
www.filestack.com/docs/api/processing show the security (``p``, ``s``) and cache
(``expiry (e)``, ``false (f)``) rows; ``resize=w:,h:`` is in Filestack's blog's URLs
and ``crop_faces=...,w:300`` in docs/image-transformations/chaining; the other rows are
the ones issue 23's brief quoted from the same column (docs/decisions.md, "Short
names"). ``cache``'s ``f`` is not taken (docs/decisions.md: ``cache=false`` is).
The ``video_convert`` and ``minify_js`` rows are filestack-swift's spellings (its
``AVTransform`` and ``MinifyJSTransform``). The rows marked ``PHP`` are the ones
Filestack's PHP SDK builds (filestack-php: its
``FilestackConfig::ALLOWED_ATTRS`` and the URLs its transform tests expect, such as
``watermark=f:<handle>,p:center,s:30`` and ``shadow=b:white,l:4,o:60,v:[4,4]``): URLs it
made are saved in customers' pages. ``fallback``'s ``file`` is filestack-python's only
spelling of its ``handle`` (``fallback(file=..., cache=...)``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import pyvips

from stowage.processing import catalogue, chain, grammar
from stowage.processing.base import Limits, Task
from stowage.processing.table import Kind
from stowage.processing.vips import VipsEngine

H, H2 = "A" * 20, "B" * 20
#: partial_blur's and partial_pixelate's (the PHP SDK's, see above)
REGIONS = {
    "o": ("objects", "[[1,2,20,10]]"),
    "a": ("amount", "5"),
    "l": ("blur", "2"),
    "t": ("type", "oval"),
}
#: task -> {alias: (long name, a value it takes)}
DOCUMENTED: dict[str, dict[str, tuple[str, str]]] = {
    "resize": {
        "w": ("width", "40"),
        "h": ("height", "30"),
        "f": ("fit", "crop"),
        "a": ("align", "[top,left]"),
    },
    "crop": {"d": ("dim", "[1,2,30,20]")},
    "rotate": {"d": ("deg", "90"), "e": ("exif", "true"), "b": ("background", "red")},
    "border": {"w": ("width", "3"), "c": ("color", "red"), "b": ("background", "blue")},
    "circle": {"b": ("background", "white")},
    "rounded_corners": {"r": ("radius", "20"), "l": ("blur", "0.5"), "b": ("background", "red")},
    "blur": {"a": ("amount", "3")},
    "sharpen": {"a": ("amount", "3")},
    "pixelate": {"a": ("amount", "4")},
    "blackwhite": {"t": ("threshold", "40")},
    "sepia": {"t": ("tone", "60")},
    "modulate": {"b": ("brightness", "120"), "h": ("hue", "30"), "s": ("saturation", "80")},
    "crop_faces": {
        "m": ("mode", "fill"),
        "w": ("width", "50"),
        "h": ("height", "40"),
        "f": ("faces", "2"),
        "n": ("minsize", "0.2"),
        "x": ("maxsize", "0.8"),
        "b": ("buffer", "20"),
    },
    "blur_faces": {
        "f": ("faces", "all"),
        "n": ("minsize", "0.2"),
        "x": ("maxsize", "0.8"),
        "b": ("buffer", "20"),
        "a": ("amount", "5"),
        "l": ("blur", "2"),
        "t": ("type", "oval"),
    },
    "pixelate_faces": {
        "f": ("faces", "[1,2]"),
        "n": ("minsize", "0.2"),
        "x": ("maxsize", "0.8"),
        "b": ("buffer", "20"),
        "a": ("amount", "5"),
        "l": ("blur", "2"),
        "t": ("type", "oval"),
    },
    "detect_faces": {
        "n": ("minsize", "0.2"),
        "x": ("maxsize", "0.8"),
        "c": ("color", "red"),
        "e": ("export", "false"),
    },
    "smart_crop": {"m": ("mode", "face"), "w": ("width", "50"), "h": ("height", "40")},
    "metadata": {"p": ("params", "[width,height]")},
    # PHP (see above), through "upscale".
    "watermark": {"f": ("file", H2), "s": ("size", "50"), "p": ("position", "[top,left]")},
    "collage": {
        "f": ("files", f"[{H2}]"),
        "w": ("width", "80"),
        "h": ("height", "60"),
        "c": ("color", "red"),
        "i": ("fit", "crop"),
        "m": ("margin", "5"),
        "a": ("autorotate", "true"),
    },
    "ascii": {
        "b": ("background", "black"),
        "f": ("foreground", "white"),
        "c": ("colored", "true"),
        "s": ("size", "40"),
        "r": ("reverse", "true"),
    },
    "compress": {"m": ("metadata", "true")},
    "oil_paint": {"a": ("amount", "5")},
    "vignette": {"a": ("amount", "30"), "b": ("background", "black"), "m": ("blurmode", "linear")},
    "torn_edges": {"s": ("spread", "[2,8]"), "b": ("background", "black")},
    "shadow": {
        "b": ("background", "black"),
        "l": ("blur", "2"),
        "o": ("opacity", "40"),
        "v": ("vector", "[3,5]"),
    },
    "polaroid": {"b": ("background", "black"), "c": ("color", "red"), "r": ("rotate", "30")},
    "partial_blur": REGIONS,
    "partial_pixelate": REGIONS,
    "upscale": {"u": ("upscale", "false"), "n": ("noise", "low"), "s": ("style", "artwork")},
    "urlscreenshot": {
        "a": ("agent", "mobile"),
        "w": ("width", "800"),
        "h": ("height", "600"),
        "m": ("mode", "window"),
        "d": ("delay", "500"),
    },
    "output": {
        "f": ("format", "png"),
        "q": ("quality", "60"),
        "s": ("strip", "true"),
        "b": ("background", "red"),
        "c": ("colorspace", "rgb"),
        "p": ("page", "2"),
        "d": ("density", "150"),
    },
    "quality": {"v": ("value", "70")},
    "pjpg": {"q": ("quality", "70"), "m": ("metadata", "true")},
    "cache": {"e": ("expiry", "600")},
    "security": {"p": ("policy", "PPP"), "s": ("signature", "SSS")},
    # filestack-swift: its AVTransform's audioSampleRate, and minify_js in babel-minify's
    # camelCase (MinifyJSTransform: mergeVars, removeConsole, ...), read lower-cased.
    "video_convert": {"audio_samplerate": ("audio_sample_rate", "44100")},
    "minify_js": {
        "keepfnname": ("keep_fn_name", "true"),
        "keepclassname": ("keep_class_name", "true"),
        "mergevars": ("merge_vars", "true"),
        "removeconsole": ("remove_console", "true"),
        "removeundefined": ("remove_undefined", "true"),
        "builtins": ("built_ins", "true"),
        "consecutiveadds": ("consecutive_adds", "true"),
        "flipcomparisons": ("flip_comparisons", "true"),
        "memberexpressions": ("member_expressions", "true"),
        "numericliterals": ("numeric_literals", "true"),
        "propertyliterals": ("property_literals", "true"),
        "regexpconstructors": ("regexp_constructors", "true"),
        "removedebugger": ("remove_debugger", "true"),
        "simplifycomparisons": ("simplify_comparisons", "true"),
        "typeconstructors": ("type_constructors", "true"),
        "undefinedtovoid": ("undefined_to_void", "true"),
    },
    "fallback": {"file": ("handle", H2)},  # filestack-python's fallback(file=...)
    "store": {
        "f": ("filename", "a.png"),
        "l": ("location", "s3"),
        "p": ("path", "folder/"),
        "c": ("container", "bucket"),
        "r": ("region", "us-east-1"),
        "a": ("access", "public"),
        "b": ("base64decode", "true"),
        "w": ("workflows", "[abc]"),
    },
}
ROWS = [
    (task, alias, long, raw)
    for task, aliases in DOCUMENTED.items()
    for alias, (long, raw) in aliases.items()
]
IDS = [f"{task}.{alias}" for task, alias, _, _ in ROWS]
LIMITS = Limits(
    max_input_pixels=10_000_000, max_input_bytes=10**8, max_output_dimension=4000, seconds=10
)


def body(task: str, key: str, long: str, raw: str) -> str:
    """``task=key:raw``, with what the task needs besides (resize needs a side)."""
    needs = catalogue.TABLE[task].needs_one_of
    if not needs or long in needs:
        return f"{task}={key}:{raw}"
    other = needs[0]
    return f"{task}={key}:{raw},{other}:{DOCUMENTED[task][_short(task, other)][1]}"


def _short(task: str, long: str) -> str:
    return next(alias for alias, (name, _) in DOCUMENTED[task].items() if name == long)


def test_the_table_is_every_short_name_the_catalogue_declares() -> None:
    declared = {
        (spec.name, short, param.name)
        for spec in catalogue.TABLE.values()
        for param in spec.params
        for short in param.short
    }
    pinned = {(task, alias, long) for task, alias, long, _ in ROWS}
    assert declared == pinned, (declared - pinned, pinned - declared)


@pytest.mark.parametrize(("task", "alias", "long", "raw"), ROWS, ids=IDS)
def test_the_grammar_reads_the_alias_as_the_long_name(
    task: str, alias: str, long: str, raw: str
) -> None:
    short = grammar.parse_task(body(task, alias, long, raw))
    spelled = grammar.parse_task(body(task, long, long, raw))
    assert short == spelled
    assert long in dict(short.options) and alias not in dict(short.options)
    upper = grammar.parse_task(body(task, alias.upper(), long, raw))  # keys: lower-cased
    assert upper == spelled


@pytest.mark.parametrize(("task", "alias", "long", "raw"), ROWS, ids=IDS)
def test_the_value_reaches_the_operation_under_the_long_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task: str, alias: str, long: str, raw: str
) -> None:
    spec = catalogue.TABLE[task]
    spelled = grammar.parse_task(body(task, long, long, raw))
    expected = spelled.get(long)
    if spec.kind is not Kind.IMAGE:  # save and request tasks: read from the parsed task
        if task in ("cache", "security"):
            found = grammar.parse_path(f"/{task}={alias}:{raw}/{H}")
            got = found.max_age if task == "cache" else getattr(found, long)
            assert got == expected
        else:
            assert chain.parse_task(body(task, alias, long, raw)).get(long) == expected
        return
    seen: list[Task] = []

    def recorder(image: pyvips.Image, given: Task) -> pyvips.Image:
        seen.append(given)
        return image

    replaced = dataclasses.replace(spec, op=recorder, load_op=None, answer=None)
    for name in (spec.name, *spec.aliases):
        monkeypatch.setitem(catalogue.TABLE, name, replaced)
    source = tmp_path / "in.png"
    pyvips.Image.black(64, 48, bands=3).pngsave(str(source))
    parsed = chain.parse([body(task, alias, long, raw)])
    output = chain.output_for(parsed, "image/png")
    VipsEngine().render(source, parsed, output, tmp_path / f"out.{output.extension}", LIMITS)
    assert seen and all(t.options == spelled.options for t in seen)


#: URLs filestack-swift's own tests expect (Tests/FilestackSDKTests/TransformableTests):
#: each reads as its long spelling, or as a task this server does not run.
SWIFT = {
    "video_convert=preset:m4a,extname:m4a,filename:audio_1,audio_bitrate:320,"
    "audio_samplerate:44100": "video_convert=preset:m4a,extname:m4a,filename:audio_1,"
    "audio_bitrate:320,audio_sample_rate:44100",
    "minify_js=booleans:true,builtIns:false,consecutiveAdds:true,deadcode:true,"
    "evaluate:false,flipComparisons:true,guards:true,infinity:false,mangle:true,"
    "memberExpressions:true,mergeVars:true,numericLiterals:true,propertyLiterals:true,"
    "regexpConstructors:true,removeConsole:false,removeDebugger:false,removeUndefined:true,"
    "simplify:true,simplifyComparisons:true,typeConstructors:true,undefinedToVoid:true": (
        "minify_js=booleans:true,built_ins:false,consecutive_adds:true,deadcode:true,"
        "evaluate:false,flip_comparisons:true,guards:true,infinity:false,mangle:true,"
        "member_expressions:true,merge_vars:true,numeric_literals:true,"
        "property_literals:true,regexp_constructors:true,remove_console:false,"
        "remove_debugger:false,remove_undefined:true,simplify:true,"
        "simplify_comparisons:true,type_constructors:true,undefined_to_void:true"
    ),
}


@pytest.mark.parametrize("swift", sorted(SWIFT))
def test_urls_of_the_swift_sdk_read_as_their_long_spelling(swift: str) -> None:
    assert grammar.parse_task(swift) == grammar.parse_task(SWIFT[swift])


@pytest.mark.parametrize("segment", ["copyright", "doc_detection=coords:false,preprocess:true"])
def test_the_swift_sdks_detection_tasks_are_not_available(segment: str) -> None:
    from stowage import errors

    with pytest.raises(errors.TaskNotAvailable, match="detection is not run"):
        grammar.parse_task(segment)
