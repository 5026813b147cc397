"""Root test configuration.

Real servers (S3, GCS, Azure, Swift, ...) are started by session fixtures in
``tests/servers/fx_*.py`` modules, loaded here as plugins. Each such module
lists in ``PROVIDER_FIXTURES`` the names ``N`` for which it defines a fixture
``provider_N`` (a ready ``Provider``) and ``storage_config_N`` (the app storage
config that reaches the same server): the contract suite and the API suite run
once per name. A server that fails to start fails its tests; nothing skips.
"""

from __future__ import annotations

import gc
import importlib
import os
import shutil
from pathlib import Path

import pytest

_SERVERS = Path(__file__).parent / "servers"
#: The servers the tests start (in their own processes, which inherit this) do not each
#: start a LibreOffice converter ahead (``office_prewarm``): hundreds of server starts
#: would cost minutes of CPU. The in-process harness turns it off in its settings; the
#: tests of pre-warming turn it on.
os.environ.setdefault("STOWAGE_OFFICE_PREWARM", "false")
pytest_plugins = [
    "tests.report_guard",
    "tests.reliability.totals",
    *(f"tests.servers.{p.stem}" for p in sorted(_SERVERS.glob("fx_*.py"))),
]


#: The longest test files (minutes each), run first: with a process per core
#: (``scripts/test``), one of them started last kept one process busy long after the
#: others had finished.
LONGEST_FIRST = (
    "tests/providers/test_contract.py",
    "tests/multinode/test_api_suite.py",
    "tests/bench/test_bench_smoke.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file's own order is kept


def pytest_collection_finish(session: pytest.Session) -> None:
    """What was imported and collected is kept out of the collector's way (``gc.freeze``),
    and the youngest generation is collected every 10,000 allocations, not 700: in a test
    process the collector walked the whole suite's objects again and again, about a tenth of
    its CPU. Paired runs of ``tests/core`` and the uploads tests: 0.76x the CPU (median of
    four pairs, 0.71-1.12x). The whole suite hardly moved (clean-clone CI: 33 min 8 s of
    user CPU against 33 min 23 s): most of its CPU is in the servers the tests start."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


def provider_names() -> list[str]:
    names: list[str] = []
    for plugin in pytest_plugins:
        names.extend(getattr(importlib.import_module(plugin), "PROVIDER_FIXTURES", []))
    return names


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "provider_name" in metafunc.fixturenames:
        metafunc.parametrize("provider_name", provider_names())


@pytest.fixture(autouse=True)
def _needed_programs(request: pytest.FixtureRequest) -> None:
    """``@pytest.mark.needs("tesseract", by="scripts/setup.d/78-tesseract.sh")``: a test
    whose engine is not installed fails, naming what installs it; it never skips."""
    for mark in request.node.iter_markers("needs"):
        missing = [tool for tool in mark.args if shutil.which(tool) is None]
        if missing:
            pytest.fail(f"{', '.join(missing)} not installed: {mark.kwargs.get('by', '')}")
