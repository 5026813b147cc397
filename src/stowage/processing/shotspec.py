"""The ``urlscreenshot`` task as the chain grammar knows it: its parameters and where it
stands in a chain. Apart from ``screenshots.py``, which draws the page: the job processes
import the task table, and the engine's imports (the URL guard, aiohttp) cost a job
process a third of its start.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from stowage import errors
from stowage.processing import params
from stowage.processing.base import Chain, Task
from stowage.processing.table import Param, TaskSpec

NAME = "urlscreenshot"
MAX_HEIGHT = 8000
#: Named devices: their window in CSS pixels, portrait (drawn at one pixel a CSS pixel).
DEVICES = {
    "iphone-se": (375, 667),
    "iphone-x": (375, 812),
    "iphone-12": (390, 844),
    "pixel-5": (393, 851),
    "galaxy-s9": (360, 740),
    "ipad": (768, 1024),
    "ipad-pro": (1024, 1366),
}


def _not_here(image: Any, task: Task) -> Any:
    raise errors.InvalidParameter(
        f"{NAME} takes a URL source: /<APIKEY>/{NAME}/<URL>", parameter=NAME
    )


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        NAME,
        (
            Param("agent", params.choice("desktop", "mobile"), short=("a",), default="desktop"),
            Param("width", params.integer(1, 1920), short=("w",), default=1024),
            Param("height", params.integer(1, MAX_HEIGHT), short=("h",), default=768),
            Param("mode", params.choice("all", "window"), short=("m",), default="all"),
            Param("delay", params.integer(0, 20000), short=("d",), default=1000),
            Param("orientation", params.choice("portrait", "landscape"), default="portrait"),
            # The schema's default is "" (no device): `device:` is not given, not a 400.
            Param("device", params.ChoiceOrNone(tuple(DEVICES))),
        ),
        op=_not_here,
        doc="a PNG of a web page drawn by headless Chromium, every request through the URL guard",
    ),
)


def task_of(chain: Chain) -> Task | None:
    """The chain's ``urlscreenshot``, which must come first; None without one."""
    names = [t.name for t in chain.tasks]
    if NAME not in names:
        return None
    if names.index(NAME) != 0 or names.count(NAME) > 1:
        raise errors.InvalidParameter(f"{NAME} must be the first task, once", parameter=NAME)
    return chain.tasks[0]


def without(chain: Chain) -> Chain:
    """The tasks after the screenshot, run on its PNG."""
    tasks = tuple(t for t in chain.tasks if t.name != NAME)
    return dataclasses.replace(chain, tasks=tasks)
