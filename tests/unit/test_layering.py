"""The folder list is the architecture: each layer imports only the layers below it.

    app/wire   → app/state → app/run → app/ui → app/browser → app/main.py
    (the wire)   (values)    (work)    (view)   (the shell)   (wiring)

Only the shell (``app/browser/`` and ``main.py``) touches ``js``/``pyodide``/``pyscript``. The
reference server uses only the wire (its vocabulary, and the fold of events into parts). Every
import is absolute and at module level, so these checks see all of them.

The server's rooms are layered the same way (see ``server/__init__.py``)::

    contract, config → store → runs → tools → turns, model, demo, scenarios → routes, http
        → cli, app

"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import appwheel  # noqa: E402 (tools/ is not a package)

APP = ROOT / "app"
BROWSER_MODULES = {"js", "pyodide", "pyscript"}
LAYERS = ["wire", "state", "run", "ui", "browser", "main"]
SHELL = {"browser", "main"}
SERVER_MAY_USE = ("app.wire",)
SERVER = ROOT / "server"
SERVER_LAYERS = [
    {"contract", "config"},  # what every room may use: the error answer, JSON, settings
    {"store"},  # all SQL
    {"runs"},  # runs as they go: the registry, the log's readers, the buses
    {"tools"},  # tools that act: MCP connections, approvals, effects at most once
    {"turns", "model", "demo", "scenarios"},  # what makes an answer
    {"routes", "http"},  # the API, and the HTTP shell around it
    {"cli", "app", "__main__"},  # wiring and tools
]
# NOTE: Alembic's files: run by Alembic, not imported.
SERVER_OUTSIDE = {"store/migrations/env.py"}
CONTRACT_SHIMS = {"sse.py"}  # NOTE: ``from app.sse import SSEDecoder`` (SPEC §2)
# NOTE: imports deferred to first use, so a first visit's boot does not pay for them: each one
# named here (the layer checks still see it: they read nested imports too).
DEFERRED_IMPORTS = {("ui/markdown.py", "app.ui.markdown_parser")}


def app_modules() -> list[str]:
    """Every module of the package, as a path relative to app/ (``browser/net.py``)."""
    return sorted(p.relative_to(APP).as_posix() for p in APP.rglob("*.py"))


def layer_of(module: str) -> str:
    """``wire`` for ``wire/sse.py`` or ``app.wire.sse``; ``main`` for ``main.py``."""
    name = module.removeprefix("app.").replace("/", ".").removesuffix(".py")
    return name.split(".")[0]


def imports(source: str) -> list[tuple[str, int, bool]]:
    """(module, relative level, at module level) of every import statement."""
    tree = ast.parse(source)
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level, id(node) in top))
    return found


def imported_names(source: str) -> set[str]:
    return {name for name, level, _ in imports(source) if level == 0}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("import js", [("js", 0, True)], id="plain-import"),
        pytest.param("from pyodide.ffi import to_js", [("pyodide.ffi", 0, True)], id="from"),
        pytest.param("def f():\n    import pyscript\n", [("pyscript", 0, False)], id="nested"),
        pytest.param("from . import sse", [("", 1, True)], id="relative"),
        pytest.param("if X:\n    import js\n", [("js", 0, False)], id="conditional"),
    ],
)
def test_imports_sees_every_form(source: str, expected: list[tuple[str, int, bool]]) -> None:
    assert imports(source) == expected


LAYERED = [m for m in app_modules() if m not in CONTRACT_SHIMS and m != "__init__.py"]


@pytest.mark.parametrize("module", LAYERED)
def test_module_imports_only_its_own_layer_and_those_below(module: str) -> None:
    own = LAYERS.index(layer_of(module))
    source = (APP / module).read_text(encoding="utf-8")
    for name in imported_names(source):
        if name.startswith("app."):
            assert LAYERS.index(layer_of(name)) <= own, f"{module} imports {name}"


@pytest.mark.parametrize("module", app_modules())
def test_every_import_is_absolute_and_at_module_level(module: str) -> None:
    source = (APP / module).read_text(encoding="utf-8")
    for name, level, top_level in imports(source):
        assert level == 0, f"{module}: relative import of {name!r}"
        # NOTE: the shell imports the browser's modules under `if IN_PYODIDE or TYPE_CHECKING`.
        if (module, name) in DEFERRED_IMPORTS:
            continue
        if not (layer_of(module) in SHELL and name.split(".")[0] in BROWSER_MODULES):
            assert top_level, f"{module}: import of {name!r} inside a block"


@pytest.mark.parametrize("module", [m for m in LAYERED if layer_of(m) not in SHELL])
def test_core_module_does_not_import_the_browser(module: str) -> None:
    names = imported_names((APP / module).read_text(encoding="utf-8"))
    assert {name.split(".")[0] for name in names} & BROWSER_MODULES == set()


def test_only_the_shell_imports_the_browser() -> None:
    touching = {
        module
        for module in app_modules()
        if {n.split(".")[0] for n in imported_names((APP / module).read_text("utf-8"))}
        & BROWSER_MODULES
    }
    assert touching and all(layer_of(module) in SHELL for module in touching)


def server_modules() -> list[str]:
    """Every module of the server, as a path relative to server/ (``store/db.py``)."""
    found = sorted(p.relative_to(SERVER).as_posix() for p in SERVER.rglob("*.py"))
    return [m for m in found if m not in SERVER_OUTSIDE and "/versions/" not in m]


def server_layer(module: str) -> int:
    """The layer of ``store/db.py`` or ``server.store.db`` (its room: the first folder)."""
    name = module.removeprefix("server.").replace("/", ".").removesuffix(".py")
    room = name.split(".")[0]
    return next(i for i, rooms in enumerate(SERVER_LAYERS) if room in rooms)


def test_every_server_module_is_in_a_room() -> None:
    flat = [m for m in server_modules() if "/" not in m]
    assert flat == ["__init__.py", "__main__.py", "app.py"], "a module of its own at the top"


@pytest.mark.parametrize("module", [m for m in server_modules() if m != "__init__.py"])
def test_server_module_imports_only_its_own_layer_and_those_below(module: str) -> None:
    own = server_layer(module)
    for name in imported_names((SERVER / module).read_text(encoding="utf-8")):
        if name.startswith("server."):
            assert server_layer(name) <= own, f"{module} imports {name}"


@pytest.mark.parametrize("module", server_modules())
def test_server_uses_only_the_wire_of_the_app(module: str) -> None:
    for name in imported_names((SERVER / module).read_text(encoding="utf-8")):
        if name == "app" or name.startswith("app."):
            assert name.startswith(SERVER_MAY_USE), f"{module} imports {name}"


SQL_START = re.compile(r"^\s*(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b")  # as written here
DATABASE_CALLS = {"one", "all", "execute", "insert", "insert_id"}
# NOTE: the demo's answer shows an SQL snippet as text; nothing runs it.
SQL_AS_TEXT = {"demo/text.py"}


def sql_in(source: str) -> list[str]:
    """The SQL statements and database calls of a module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if SQL_START.match(node.value):
                found.append(node.value.strip()[:40])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            named_db = (isinstance(owner, ast.Name) and owner.id == "db") or (
                isinstance(owner, ast.Attribute) and owner.attr == "db"
            )
            if named_db and node.func.attr in DATABASE_CALLS:
                found.append(f"db.{node.func.attr}(…)")
    return found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('db.one("SELECT 1")', ["SELECT 1", "db.one(…)"]),
        ('f"SELECT * FROM {table}"', ["SELECT * FROM"]),  # NOTE: an f-string's text too
        ('await self.db.execute("x")', ["db.execute(…)"]),
        ('q = " DELETE FROM chats"', ["DELETE FROM chats"]),
        ('words = "Select a model"', []),
    ],
)
def test_sql_in_sees_statements_and_database_calls(source: str, found: list[str]) -> None:
    assert sorted(sql_in(source)) == sorted(found)


@pytest.mark.parametrize(
    "module", [m for m in server_modules() if not m.startswith("store/") and m not in SQL_AS_TEXT]
)
def test_all_sql_is_in_the_store(module: str) -> None:
    assert sql_in((SERVER / module).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("store/db.py", 1),
        ("server.runs.registry", 2),
        ("server.tools.connections", 3),
        ("model/providers/openai_chat.py", 4),
        ("server.routes", 5),
        ("__main__.py", 6),
    ],
)
def test_server_layer_of_paths_and_names(module: str, layer: int) -> None:
    assert server_layer(module) == layer


def test_pyscript_config_loads_the_app_wheel_which_holds_every_module_but_the_script() -> None:
    config = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    assert appwheel.URL in config["packages"] and "files" not in config
    shipped = {path.relative_to(ROOT).as_posix() for path in appwheel.app_modules()}
    assert shipped == {f"app/{module}" for module in app_modules() if module != "main.py"}


def test_pyscript_config_loads_only_local_runtime() -> None:
    config = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    assert config["interpreter"] == "./static/interpreter.mjs"
    assert "://" not in (ROOT / "pyscript.toml").read_text(encoding="utf-8")
    modules = [
        ROOT / "static" / "interpreter.mjs",
        *sorted((ROOT / "static" / "boot").glob("*.mjs")),
    ]
    for module in modules:
        source = module.read_text(encoding="utf-8")
        assert "://" not in source, module
        for imported in re.findall(r'^import (?:.* from )?"([^"]+)";$', source, flags=re.MULTILINE):
            assert imported.startswith("."), (module, imported)
            assert (module.parent / imported).resolve().is_file(), (module, imported)
    entry = modules[0].read_text(encoding="utf-8")
    imports = re.findall(r'^import (?:.* from )?"([^"]+)";$', entry, flags=re.MULTILINE)
    assert sorted(imports) == [
        "./boot/snapshot.mjs",
        "./boot/wheels.mjs",
        "./boot/zip.mjs",
        "./vendor/pyodide/pyodide.mjs",
    ]


def test_every_file_the_page_preloads_is_shipped_and_local() -> None:
    """A preload of a file that is not shipped (a vendored build renamed it) would cost a
    request and save nothing."""
    page = (ROOT / "index.html").read_text(encoding="utf-8")
    preloads = re.findall(r'<link rel="(?:module)?preload" href="\./([^"]+)"', page)
    assert "static/vendor/pyodide/python_stdlib.zip" in preloads
    missing = [path for path in preloads if not (ROOT / path).is_file()]
    assert not missing, f"preloaded but not shipped: {missing}"
    assert "pyodide.asm.wasm" not in " ".join(preloads)  # NOTE: see the comment in index.html


def literal_vocabularies(source: str) -> dict[int, frozenset[str]]:
    """Each ``Literal["a", "b", …]`` of two words or more in a module, named alias or written
    inline in an annotation: its line → its words."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "Literal"
        ):
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            words = frozenset(str(item.value) for item in items if isinstance(item, ast.Constant))
            if len(words) > 1:
                found[node.lineno] = words
    return found


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('A = Literal["x", "y"]\nB = Literal["z"]\nC = int\n', {1: frozenset({"x", "y"})}),
        (
            'class K:\n    mode: Literal["a", "b"] | None = None\n',
            {2: frozenset({"a", "b"})},
        ),
        ('def f(r: Literal["p", "q"] = "p") -> Mode: ...\n', {1: frozenset({"p", "q"})}),
    ],
)
def test_literal_vocabularies_reads_aliases_and_annotations(
    source: str, expected: dict[int, frozenset[str]]
) -> None:
    assert literal_vocabularies(source) == expected


def test_each_vocabulary_is_declared_once_for_page_and_server() -> None:
    declared: dict[frozenset[str], list[str]] = {}
    for path in sorted([*APP.rglob("*.py"), *SERVER.rglob("*.py")]):
        for line, words in literal_vocabularies(path.read_text(encoding="utf-8")).items():
            declared.setdefault(words, []).append(f"{path.relative_to(ROOT)}:{line}")
    twice = {sorted(words)[0]: places for words, places in declared.items() if len(places) > 1}
    assert twice == {}, "one declaration in app/wire, imported by the others"
