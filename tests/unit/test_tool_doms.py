"""The stand-in DOMs of the tools (the import trace, the in-page bench) keep up with the view's
``Dom``: a method the view starts calling is a method they have (``make bench`` broke once)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from app.ui.view import Dom

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _tool(path: Path, name: str) -> ModuleType:
    """A tool's module by its path (tools/trace.py would lose to the standard ``trace``)."""
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # NOTE: its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


inpage = _tool(TOOLS / "bench" / "inpage.py", "riacho_bench_inpage")
import_trace = _tool(TOOLS / "trace.py", "riacho_import_trace")


def _methods(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_") and callable(vars(cls)[name])}


@pytest.mark.parametrize(
    "stand_in", [inpage._HtmlDom, import_trace._FakeDom], ids=["bench", "trace"]
)
def test_a_tool_dom_has_every_method_of_the_views_dom(stand_in: type) -> None:
    assert _methods(Dom) - _methods(stand_in) == set()
