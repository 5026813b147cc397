"""Every task and option name filestack-python 4.0.0 writes into a URL is one the task
table reads: its ``ImageTransformationMixin`` read method by method (the task each method
adds and the keyword arguments it passes on as options). ``fallback(file=...)`` was once
refused as an unknown option; a hand-picked list of calls had missed it."""

from __future__ import annotations

import inspect
import re

import pytest
from filestack.mixins.imagetransformation import ImageTransformationMixin

from stowage.processing import catalogue

_ADDS = re.compile(r"_add_transform_task\('([a-z_]+)'")


def sdk_methods() -> list[tuple[str, str, list[str]]]:
    """(method, the task it adds, its option names) for each method of the mixin."""
    found = []
    for name, method in inspect.getmembers(ImageTransformationMixin, inspect.isfunction):
        adds = _ADDS.search(inspect.getsource(method))
        if name.startswith("_") or adds is None:
            continue
        options = [p for p in inspect.signature(method).parameters if p != "self"]
        found.append((name, adds.group(1), options))
    return found


METHODS = sdk_methods()


def test_the_mixin_is_read_whole() -> None:
    assert len(METHODS) >= 40 and {"fallback", "resize", "av_convert"} <= {m for m, _, _ in METHODS}


@pytest.mark.parametrize(("method", "task", "options"), METHODS, ids=[m for m, _, _ in METHODS])
def test_each_method_writes_a_task_and_options_the_table_reads(
    method: str, task: str, options: list[str]
) -> None:
    spec = catalogue.spec(task)
    assert spec is not None, f"{method}() writes {task}, which the table lacks"
    unknown = [option for option in options if spec.param(option) is None]
    assert unknown == [], f"{method}() may write {task} options the table lacks"
