"""The tool card (SPEC §7, §12): name, arguments, status, result; for a tool that acts, its
effect in words (``data-effect``) and, while it waits, Approve / Deny."""

from __future__ import annotations

import json
from html import escape
from typing import Any, Final

from app.state.decisions import effect_words, shown_effect, waits_for_decision
from app.wire.parts import ToolCallPart

TOOL_WORDS: Final = {
    "streaming": "Preparing…",
    "completed": "Running…",
    "done": "Done",
    "error": "Failed",
}
"""A tool call's status in words (the ``data-tool-status`` hook keeps the state's name)."""


def _attr(name: str, value: str) -> str:
    return f' {name}="{escape(value, quote=True)}"'


def tool_status_words(part: ToolCallPart, *, run_live: bool) -> str:
    """The same words from start to end; a call the answer left unfinished says so; a call
    of a tool that acts says its effect instead."""
    if part.effect is not None and part.effect != "none":
        return effect_words(part, run_live=run_live)
    if not run_live and part.status in ("streaming", "completed"):
        return "Not finished"
    return TOOL_WORDS[part.status]


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _decision_buttons(part: ToolCallPart) -> str:
    name = escape(part.tool_name or "this tool")
    return (
        '<div class="tool-decision" role="group" aria-label="Allow this action?">'
        f'<button type="button" data-action="approve-tool"'
        f"{_attr('data-tool-call-id', part.tool_call_id)}>Approve</button>"
        f'<button type="button" data-action="deny-tool"'
        f"{_attr('data-tool-call-id', part.tool_call_id)}>Deny</button>"
        f'<span class="tool-decision-note">{name} acts only if you approve.</span></div>'
    )


def tool_call_html(part: ToolCallPart, *, run_live: bool = True) -> str:
    """A tool call: name, live arguments, status (or effect), result, and Approve / Deny."""
    result = ""
    if part.status in ("done", "error"):
        kind = "tool-result error" if part.is_error else "tool-result"
        result = (
            '<details class="tool-result-box"><summary>Result</summary>'
            f'<pre class="{kind}" tabindex="0">{escape(_json_text(part.result))}</pre></details>'
        )
    effect = shown_effect(part, run_live=run_live)
    effect_attr = _attr("data-effect", effect) if effect is not None else ""
    buttons = _decision_buttons(part) if waits_for_decision(part, run_live=run_live) else ""
    return (
        f'<div class="tool-call"{_attr("data-tool-call-id", part.tool_call_id)}'
        f"{_attr('data-tool-status', part.status)}{effect_attr}>"
        f'<div class="tool-head"><span class="tool-name">{escape(part.tool_name or "tool")}</span>'
        f' <span class="tool-status">{escape(tool_status_words(part, run_live=run_live))}'
        "</span></div>"
        f'<pre class="tool-args" tabindex="0" aria-label="Arguments">'
        f"{escape(_json_text(dict(part.arguments)))}</pre>{buttons}{result}</div>"
    )
