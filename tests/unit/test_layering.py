"""The pure core never touches the browser; the page ships every module of the package."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
BROWSER_MODULES = {"js", "pyodide", "pyscript"}
# NOTE: browser.py is the adapter; main.py is the PyScript entry point that wires it.
SHELL = {"browser.py", "main.py"}


def imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("import js", {"js"}, id="plain-import"),
        pytest.param("from pyodide.ffi import to_js", {"pyodide"}, id="from-submodule"),
        pytest.param("def f():\n    import pyscript\n", {"pyscript"}, id="nested-import"),
        pytest.param("from . import sse", set(), id="relative-import"),
    ],
)
def test_imported_roots_sees_every_form(source: str, expected: set[str]) -> None:
    assert imported_roots(source) == expected


@pytest.mark.parametrize("module", sorted(p.name for p in APP.glob("*.py") if p.name not in SHELL))
def test_core_module_does_not_import_the_browser(module: str) -> None:
    source = (APP / module).read_text(encoding="utf-8")
    assert imported_roots(source) & BROWSER_MODULES == set()


def test_only_the_shell_imports_the_browser() -> None:
    touching = {
        p.name
        for p in APP.glob("*.py")
        if imported_roots(p.read_text(encoding="utf-8")) & BROWSER_MODULES
    }
    assert touching <= SHELL


def test_pyscript_config_ships_every_app_module() -> None:
    config = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    shipped = {Path(target).as_posix().removeprefix("./") for target in config["files"].values()}
    modules = {p.relative_to(ROOT).as_posix() for p in APP.glob("*.py") if p.name != "main.py"}
    assert shipped == modules


def test_pyscript_config_loads_only_local_runtime() -> None:
    config = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    assert config["interpreter"].startswith("./static/vendor/")
    assert "://" not in (ROOT / "pyscript.toml").read_text(encoding="utf-8")
