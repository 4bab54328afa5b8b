"""Developer facts behind words: the answer's menu (what happened to it, said in sentences,
with the one-line trace a user pastes into a bug report folded inside), and the words of the
continuation marker.

Nothing here shows an error code or a trace field name in front of the user: the codes and
the trace line sit inside the menu, under "For a bug report".
"""

from __future__ import annotations

from app.state.state import RunState
from app.state.trace import RunTrace, format_trace
from app.ui.markup import attr, escape
from app.wire.parts import ContinuationPart

TIMEOUT_WORDS = {
    "first_event": "No answer came in time, so the page stopped waiting.",
    "idle": "The answer paused too long, so the page stopped waiting.",
    "total": "The answer took too long in all, so the page stopped it.",
}
CANCEL_WORDS = {
    "confirmed": "The server confirmed the stop",
    "unconfirmed": "The server did not confirm the stop",
    "completed_first": "The answer had finished before the stop arrived",
}


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def trace_sentences(trace: RunTrace) -> list[str]:
    """What the trace says, as sentences a user can read."""
    said: list[str] = []
    if trace.time_to_first_content is not None:
        said.append(f"The first words came after {_duration(trace.time_to_first_content)}.")
    if trace.request_start is not None and trace.terminal is not None:
        said.append(f"It took {_duration(trace.terminal - trace.request_start)} in all.")
    if trace.resumes:
        times = "once" if len(trace.resumes) == 1 else f"{len(trace.resumes)} times"
        said.append(f"The connection was picked up again {times}.")
    if trace.gaps:
        said.append("Part of the stream went missing on the way.")
    if trace.timeout_fired is not None:
        said.append(TIMEOUT_WORDS[trace.timeout_fired])
    if trace.cancel_outcome is not None:
        latency = trace.cancel_latency
        after = f" after {_duration(latency)}" if latency is not None else ""
        said.append(f"{CANCEL_WORDS[trace.cancel_outcome]}{after}.")
    if trace.protocol_issues:
        said.append("Some of what the server sent could not be read and was skipped.")
    return said


def bug_report_line(run: RunState) -> str:
    """The trace line, with the error code if there is one (what a bug report needs)."""
    line = format_trace(run.trace)
    return line if run.error is None else f"{line} error={run.error.code}"


def answer_menu_html(run: RunState) -> str:
    """The answer's menu: "About this answer" in words, and the trace for a bug report."""
    sentences = trace_sentences(run.trace) or ["Nothing unusual happened to this answer."]
    items = "".join(f"<p>{escape(s)}</p>" for s in sentences)
    return (
        '<details class="run-details answer-menu" data-part="answer-menu">'
        '<summary aria-label="About this answer">About this answer</summary>'
        f'<div class="answer-facts">{items}</div>'
        '<details class="bug-report"><summary>For a bug report</summary>'
        f"<pre{attr('data-run-trace', run.run_id)}>{escape(bug_report_line(run))}</pre>"
        "</details></details>"
    )


def continuation_words(part: ContinuationPart) -> str:
    """The continuation marker in words (never "Continuation (replay): recovered")."""
    if part.recovered:
        return "Connection restored: the answer picked up where it left off"
    return "Connection lost: picking the answer up again…"
