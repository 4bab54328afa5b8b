"""The ``[data-action]`` vocabulary (``app/wire/hooks.py``) is the only one: every name the page,
its view, boot script and end-to-end tests write is in it, the page's table handles each one,
and each one the table hands to the controller is one the controller knows.

``app/browser/page.py`` imports ``js``, so its table is read from its source, not run."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from app.wire.hooks import PAGE_ACTIONS, is_page_action

ROOT = Path(__file__).resolve().parents[2]
WRITTEN = re.compile(r"""data-action=\\?["']?([a-z][a-z-]*)|icon_button\(\s*"([a-z][a-z-]*)\"""")
WHERE_WRITTEN = [
    *sorted((ROOT / "app").rglob("*.py")),
    ROOT / "index.html",
    *sorted((ROOT / "static").glob("*.js")),
    *sorted((ROOT / "static").glob("*.mjs")),
    *sorted((ROOT / "tests" / "e2e").glob("*.py")),
]


def written_actions(source: str) -> set[str]:
    """The ``data-action`` names ``source`` writes or selects."""
    return {first or second for first, second in WRITTEN.findall(source)}


def page_table() -> dict[str, ast.expr]:
    """The page's table: action → its row (``Act(...)``), from ``Page._actions``."""
    tree = ast.parse((ROOT / "app" / "browser" / "page.py").read_text(encoding="utf-8"))
    method = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "_actions"
    )
    table = next(node for node in ast.walk(method) if isinstance(node, ast.Dict))
    return {
        key.value: value
        for key, value in zip(table.keys, table.values, strict=True)
        if isinstance(key, ast.Constant) and isinstance(key.value, str)
    }


def told_to_controller(row: ast.expr) -> str | None:
    """The action a row hands to the controller as it is (``tell("x")``), if it does."""
    call = row.args[0] if isinstance(row, ast.Call) and row.args else None
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "tell"
        and isinstance(call.args[0], ast.Constant)
    ):
        return str(call.args[0].value)
    return None


def controller_cases() -> set[str]:
    """The action names matched in ``Controller.click`` and ``Controller._on_message``."""
    tree = ast.parse((ROOT / "app" / "ui" / "controller.py").read_text(encoding="utf-8"))
    methods = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name in ("click", "_on_message")
    ]
    return {
        node.value
        for method in methods
        for case in ast.walk(method)
        if isinstance(case, ast.match_case)
        for node in ast.walk(case.pattern)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ('<button data-action="stop">', {"stop"}),
        ("page.locator('[data-action=copy-code]')", {"copy-code"}),
        ('f"[data-action=\\"branch-prev\\"]"', {"branch-prev"}),
        ('icon_button("edit", "Edit message", "edit")', {"edit"}),
        ('query(f"[data-action={name}]")', set()),
    ],
)
def test_written_actions_reads_each_form(source: str, names: set[str]) -> None:
    assert written_actions(source) == names


@pytest.mark.parametrize("path", WHERE_WRITTEN, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_action_written_is_in_the_vocabulary(path: Path) -> None:
    unknown = written_actions(path.read_text(encoding="utf-8")) - PAGE_ACTIONS
    assert not unknown, f"not in app/wire/hooks.py: {sorted(unknown)}"


def test_the_vocabulary_is_all_in_use() -> None:
    used = set().union(
        *(written_actions(path.read_text(encoding="utf-8")) for path in WHERE_WRITTEN)
    )
    assert PAGE_ACTIONS - used == set()


def test_the_page_table_has_one_row_per_action() -> None:
    assert set(page_table()) == PAGE_ACTIONS


def test_what_the_table_tells_the_controller_the_controller_handles() -> None:
    told = {name for row in page_table().values() if (name := told_to_controller(row))}
    assert told, "the table hands some actions to the controller"
    assert told - controller_cases() == set()


def test_the_controller_matches_only_actions_of_the_vocabulary() -> None:
    assert controller_cases() - PAGE_ACTIONS == set()


@pytest.mark.parametrize(("name", "known"), [("stop", True), ("Stop", False), ("", False)])
def test_is_page_action(name: str, known: bool) -> None:
    assert is_page_action(name) is known
