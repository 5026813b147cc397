"""The shape of src/: layers import downward only, no module imports itself back through
others, and every module imports on its own.

Layers, top to bottom (a module may import its own package and any lower layer; imports
inside functions and under ``TYPE_CHECKING`` count the same as any other):

    __main__, docs             entry point; the reference docs generated from the CLI
    cli                        commands
    http, client               the server's edge; the CLI's client of it
    assembly                   the one place that builds the parts and hands them down
    edge, processing           capabilities built on the core (the edge cache tier, the
                               image transformation engine; never each other)
    core                       the operations
    storage, registry          where bytes and rows live (never each other)
    config, observe            settings; logs and metrics
    values                     the one coercion engine of settings; providers' typed settings
    booleans, jsonkeys         the one parser of boolean words; JSON with each key once
    errors, words              the one error hierarchy; a client's words read in ASCII
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
LAYERS: dict[str, int] = {
    "errors": 0,
    "words": 0,
    "booleans": 1,
    "jsonkeys": 1,
    "values": 2,
    "config": 3,
    "observe": 3,
    "storage": 4,
    "registry": 4,
    "core": 5,
    "edge": 6,
    "processing": 6,
    "assembly": 7,
    "http": 8,
    "client": 8,
    "migration": 8,  # import, migrate, backup: built by the assembly, beside http
    "cli": 9,
    "docs": 10,
    "__main__": 10,
}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((SRC / "stowage").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()
#: Importing the entry point runs the CLI.
IMPORTABLE = [m for m in MODULES if m != "stowage.__main__"]


def _imports(module: str, path: Path) -> set[str]:
    """The stowage modules ``module`` imports, wherever in the file it does."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # ``from package import module`` depends on that module (as import-linter
            # reads it), ``from module import name`` on the module.
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                named.add(sub if sub in MODULES else base)
    return {_owner(name) for name in named if _owner(name) not in ("", module)}


def _owner(name: str) -> str:
    """The module a dotted name is (or is defined in), or "" outside stowage."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name if name != "stowage" else ""


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _group(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_every_module_has_a_layer() -> None:
    assert {_group(m) for m in MODULES if m != "stowage"} <= set(LAYERS)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if module != "stowage"
        and _group(target) != _group(module)
        and LAYERS[_group(target)] >= LAYERS[_group(module)]
    ]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return found


def test_imports_run_downward_only() -> None:
    assert upward_imports(GRAPH) == []


def test_no_import_cycles() -> None:
    assert cycles(GRAPH) == []


def test_the_checks_catch_what_they_guard_against() -> None:
    a, b, c = "stowage.core.a", "stowage.core.b", "stowage.storage.c"
    assert cycles({a: {b}, b: {c}, c: {a}}) == [[a, b, c, a]]
    assert upward_imports({c: {a}, a: {c}}) == [f"{c} -> {a}"]
    assert "stowage.core.providers" in GRAPH["stowage.core.service"]  # the graph is read


def test_no_module_imports_another_modules_private_names() -> None:
    private = [
        f"{module}: {node.module}.{alias.name}"
        for module, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stowage")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.endswith("__")
    ]
    assert private == []


def _uses_of(attribute: str) -> list[str]:
    """``module:line`` of every ``x.<attribute>`` in src/."""
    return [
        f"{module}:{node.lineno}"
        for module, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == attribute
    ]


def test_no_module_uses_asyncio_wait_for() -> None:
    # Python 3.11's wait_for swallows a cancel that meets the awaited result (CPython
    # gh-86296): a worker loop then never ends and a shutdown hangs (core/wake.py).
    # asyncio.timeout keeps the cancel.
    assert _uses_of("wait_for") == []


def test_images_are_scaled_only_through_ops_scaled() -> None:
    # libvips' thumbnail_image turns an image by its EXIF orientation unless told not to;
    # ops.scaled never does (the service keeps the stored orientation for viewers).
    used = _uses_of("thumbnail_image")
    assert [place.split(":")[0] for place in used] == ["stowage.processing.ops"]


def test_the_repository_tracks_no_links() -> None:
    # A worktree's link to the main checkout's .venv or vendored assets, committed by
    # mistake, broke a clean clone's setup ("Too many levels of symbolic links").
    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=SRC.parent, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert [line for line in listed if line.startswith("120000 ")] == []


def test_every_module_imports_alone() -> None:
    """Each module in a process with no other stowage module imported: a child forked from
    an interpreter that imported only the third-party and standard packages stowage uses
    (their top-level names), so that each check costs a fork, not an interpreter's start
    and those imports again (58 s for 244 modules). The parent also holds every stowage
    module's compiled code, unexecuted: a child runs the modules its import reaches, as
    alone, without reading and unmarshalling their bytecode again (a quarter of a child's
    time: 0.10 s of 0.43 for ``stowage.assembly``)."""
    found = _run_python(_LISTING, json.dumps(IMPORTABLE))
    files = json.dumps({name: str(path) for name, path in MODULES.items()})
    failed = json.loads(_run_python(_FORKED_IMPORTS, json.dumps(IMPORTABLE), found, files))
    assert failed == {}


#: Prints the top-level names of the packages other than stowage that importing every
#: module brings in.
_LISTING = """
import importlib, json, sys
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
tops = {name.split(".")[0] for name in sys.modules}
print(json.dumps(sorted(tops - {"stowage", "__main__"})))
"""

#: Imports the packages of argv[2] and compiles the modules of argv[3] ({name: file}),
#: then imports each module of argv[1] in a forked child; prints {module: last line of its
#: traceback} for those that failed.
_FORKED_IMPORTS = """
import importlib, importlib.machinery, importlib.util, json, os, sys, traceback
for name in json.loads(sys.argv[2]):
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # a name only its own package imports (a private C module)
assert not [m for m in sys.modules if m.split(".")[0] == "stowage"], "stowage imported"
CODE = {}
for name, file in json.loads(sys.argv[3]).items():
    loader = importlib.machinery.SourceFileLoader(name, file)
    CODE[name] = (file, file.endswith("__init__.py"), loader.get_code(name))

class Compiled(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        return CODE[fullname][2]

class Held:
    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname not in CODE:
            return None
        file, package, _ = CODE[fullname]
        below = [os.path.dirname(file)] if package else None
        return importlib.util.spec_from_file_location(
            fullname, file, loader=Compiled(fullname, file), submodule_search_locations=below
        )

sys.meta_path.insert(0, Held)
failed = {}
for name in json.loads(sys.argv[1]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(name)
            os._exit(0)
        except BaseException:
            os.write(write, traceback.format_exc().encode()[-4000:])
            os._exit(1)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        told = said.read().decode(errors="replace")
    if os.waitpid(pid, 0)[1] != 0:
        failed[name] = told.strip().splitlines()[-1:] or ["died"]
print(json.dumps(failed))
"""


def _run_python(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_all_modules_import_in_any_order(order: str) -> None:
    names = sorted(IMPORTABLE, reverse=order == "reversed")
    code = f"import importlib\nfor name in {names!r}:\n    importlib.import_module(name)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr


#: The live parts ``stowage/assembly.py`` builds once and hands down.
PARTS = {"Stowage", "Providers", "Fetcher", "Changes", "Webhooks", "Apps", "Uploads"}
PARTS |= {"Processor", "RateLimiter", "Recovery", "Janitor", "build_purger", "build_registry"}


def _calls(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def test_the_parts_are_built_in_one_place() -> None:
    """Only the assembly builds a live part (the registry package builds its own for
    ``stowage db``); no module keeps a table of live objects keyed by another."""
    builders = {
        module: sorted(_calls(path) & PARTS)
        for module, path in MODULES.items()
        if module != "stowage.assembly" and not module.startswith("stowage.registry")
    }
    assert {m: found for m, found in builders.items() if found} == {}
    weak_tables = [m for m, p in MODULES.items() if "WeakKeyDictionary" in p.read_text()]
    assert weak_tables == []


MAX_MODULE_LINES = 450
MAX_CLASS_LINES = 300


def _too_long(modules: dict[str, Path]) -> list[str]:
    found = []
    for name, path in modules.items():
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > MAX_CLASS_LINES:
                    found.append(f"{name}.{node.name}: a class of {length} lines")
    return found


def test_modules_and_classes_stay_short(tmp_path: Path) -> None:
    """No module over 450 lines, no class over 300 (issue 22): a reader sees a module whole."""
    assert _too_long(MODULES) == []
    long_class = "class Big:\n" + "    x = 1\n" * MAX_CLASS_LINES
    (tmp_path / "big.py").write_text(long_class + "\n" * MAX_MODULE_LINES)
    assert len(_too_long({"big": tmp_path / "big.py"})) == 2  # the check itself bites
