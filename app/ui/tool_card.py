"""The tool card (SPEC §7, §12): name, arguments, status, result; for a tool that acts, its
effect in words (``data-effect``) and, while it waits, Approve / Deny. A call the page runs
(SPEC §13, ``data-runs-in="client"``) shows its code and, while it waits, Run / Don't run and
"Run code automatically in this chat"."""

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
CLIENT_WAITING: Final = "Waits for this page to run it"


def _attr(name: str, value: str) -> str:
    return f' {name}="{escape(value, quote=True)}"'


def tool_status_words(part: ToolCallPart, *, run_live: bool) -> str:
    """The same words from start to end; a call the answer left unfinished says so; a call
    of a tool that acts says its effect instead."""
    if part.effect is not None and part.effect != "none":
        return effect_words(part, run_live=run_live)
    if part.runs_in == "client" and part.status == "completed":
        return CLIENT_WAITING if run_live else "Not run"
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


def _client_buttons(part: ToolCallPart) -> str:
    call = _attr("data-tool-call-id", part.tool_call_id)
    return (
        '<div class="tool-decision client-run" role="group" aria-label="Run this code?">'
        f'<button type="button" data-action="approve-tool"{call}>Run</button>'
        f'<button type="button" data-action="deny-tool"{call}>Don\'t run</button>'
        '<label class="auto-run"><input type="checkbox" name="auto-run-code">'
        " Run code automatically in this chat</label>"
        '<span class="tool-decision-note">It runs in this page only, with no network.</span>'
        "</div>"
    )


def _arguments_html(part: ToolCallPart) -> str:
    code = part.arguments.get("code")
    if part.runs_in == "client" and isinstance(code, str):
        return (
            '<pre class="tool-args tool-code" tabindex="0" aria-label="Code">'
            f'<code class="language-python">{escape(code)}</code></pre>'
        )
    return (
        '<pre class="tool-args" tabindex="0" aria-label="Arguments">'
        f"{escape(_json_text(dict(part.arguments)))}</pre>"
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
    if part.runs_in == "client" and run_live and part.status == "completed":
        buttons = _client_buttons(part)
    runs_in = _attr("data-runs-in", part.runs_in) if part.runs_in else ""
    return (
        f'<div class="tool-call"{_attr("data-tool-call-id", part.tool_call_id)}'
        f"{_attr('data-tool-status', part.status)}{effect_attr}{runs_in}>"
        f'<div class="tool-head"><span class="tool-name">{escape(part.tool_name or "tool")}</span>'
        f' <span class="tool-status">{escape(tool_status_words(part, run_live=run_live))}'
        f"</span></div>{_arguments_html(part)}{buttons}{result}</div>"
    )
