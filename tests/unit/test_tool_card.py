"""The tool card of a tool that acts (app/ui/tool_card.py, app/state/decisions.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.state.decisions import actions_that_stay_done, regenerate_warning
from app.ui.tool_card import tool_call_html
from app.wire.parts import TextPart, ToolCallPart
from app.wire.text import Text


def card(run_live: bool = True, **fields: Any) -> str:
    part = ToolCallPart("c1", "notes__save_note", arguments={"text": "river high"}, **fields)
    return tool_call_html(part, run_live=run_live)


def test_a_waiting_call_shows_its_arguments_with_approve_and_deny() -> None:
    html = card(status="completed", effect="awaiting_approval")
    assert 'data-effect="awaiting_approval"' in html
    assert 'data-action="approve-tool"' in html and 'data-action="deny-tool"' in html
    assert "river high" in html and "Waiting for your approval" in html


@pytest.mark.parametrize(
    ("fields", "run_live", "effect", "words"),
    [
        pytest.param({"effect": "running"}, True, "running", "Approved — running…", id="running"),
        pytest.param({"effect": "done", "status": "done"}, False, "done", "Done", id="done"),
        pytest.param(
            {"effect": "unknown", "status": "error"},
            False,
            "unknown",
            "May have happened — check",
            id="unknown-never-failed",
        ),
        pytest.param(
            {"effect": "denied", "decided_by": "timeout"},
            False,
            "denied",
            "Denied (no decision in time) — not run",
            id="denied-by-deadline",
        ),
        pytest.param(
            {"effect": "awaiting_approval"},
            False,
            "denied",
            "Denied (stopped) — not run",
            id="left-waiting-by-a-stopped-run",
        ),
        pytest.param(
            {"effect": "running", "status": "completed"},
            False,
            "unknown",
            "May have happened — check",
            id="left-running-by-an-ended-run",
        ),
    ],
)
def test_the_effect_in_words(
    fields: dict[str, Any], run_live: bool, effect: str, words: str
) -> None:
    html = card(run_live=run_live, **fields)
    assert f'data-effect="{effect}"' in html
    assert words in html
    assert "approve-tool" not in html
    if effect == "unknown":
        assert "Failed" not in html


def test_a_built_in_tool_has_no_effect_hook() -> None:
    html = tool_call_html(ToolCallPart("c1", "calculator", status="done"))
    assert "data-effect" not in html and "Done" in html


def test_regenerate_lists_only_the_actions_that_stay_done() -> None:
    parts = (
        TextPart(Text("ok")),
        ToolCallPart("a", "notes__save_note", effect="done"),
        ToolCallPart("b", "notes__save_note", effect="denied"),
        ToolCallPart("c", "mail__send", effect="unknown"),
        ToolCallPart("d", "calculator"),
    )
    assert [c.tool_call_id for c in actions_that_stay_done(parts)] == ["a", "c"]
    warning = regenerate_warning(parts)
    assert warning is not None
    assert "notes__save_note: done" in warning and "mail__send: may have happened" in warning
    assert regenerate_warning(parts[:1]) is None
