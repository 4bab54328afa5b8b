"""The pure core never touches the browser; the page ships every module of the package."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
BROWSER_MODULES = {"js", "pyodide", "pyscript"}
# NOTE: app/browser/ is the adapter; main.py is the PyScript entry point that wires it.
SHELL_PACKAGE = "browser/"
ENTRY = "main.py"


def app_modules() -> list[str]:
    """Every module of the package, as a path relative to app/ (``browser/net.py``)."""
    return sorted(p.relative_to(APP).as_posix() for p in APP.rglob("*.py"))


def is_shell(module: str) -> bool:
    return module == ENTRY or module.startswith(SHELL_PACKAGE)


def imported_modules(source: str) -> set[str]:
    """The full names of every absolute import (``app.browser.net``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


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


CORE = [module for module in app_modules() if not is_shell(module)]


@pytest.mark.parametrize("module", CORE)
def test_core_module_does_not_import_the_browser(module: str) -> None:
    source = (APP / module).read_text(encoding="utf-8")
    assert imported_roots(source) & BROWSER_MODULES == set()
    assert not any(name.startswith("app.browser") for name in imported_modules(source))


def test_only_the_shell_imports_the_browser() -> None:
    touching = {
        module
        for module in app_modules()
        if imported_roots((APP / module).read_text(encoding="utf-8")) & BROWSER_MODULES
    }
    assert touching and all(is_shell(module) for module in touching)


def test_pyscript_config_ships_every_app_module() -> None:
    config = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    shipped = {Path(target).as_posix().removeprefix("./") for target in config["files"].values()}
    modules = {f"app/{module}" for module in app_modules() if module != ENTRY}
    assert shipped == modules


def test_pyscript_config_loads_only_local_runtime() -> None:
    config = tomllib.loads((ROOT / "pyscript.toml").read_text(encoding="utf-8"))
    assert config["interpreter"].startswith("./static/vendor/")
    assert "://" not in (ROOT / "pyscript.toml").read_text(encoding="utf-8")
