"""Developer facts behind words (app/ui/answer_menu.py) and no "Partial answer" without text."""

from __future__ import annotations

from app.state.state import RunState
from app.state.trace import RunTrace
from app.ui.answer_menu import trace_sentences
from app.ui.render import status_html
from app.wire.parts import TextPart
from app.wire.text import Text


def test_the_trace_in_sentences_without_field_names() -> None:
    trace = RunTrace(
        "r1",
        request_start=0,
        first_content=52,
        terminal=2500,
        cancel_requested=2400,
        cancel_settled=2430,
        cancel_outcome="confirmed",
        timeout_fired="idle",
    )

    said = " ".join(trace_sentences(trace))

    assert "The first words came after 52 ms." in said
    assert "It took 2.5 s in all." in said
    assert "The server confirmed the stop after 30 ms." in said
    assert "paused too long" in said
    for field in ("ttfb", "ttfc", "total=", "run_", "idle_timeout"):
        assert field not in said


def test_no_partial_warning_on_an_answer_with_no_text() -> None:
    stopped = RunState("r1", "c1", status="cancelled", cancel="confirmed")
    with_text = RunState(
        "r1", "c1", status="cancelled", cancel="confirmed", parts=(TextPart(Text("Half")),)
    )

    assert 'data-warning="partial"' not in status_html(stopped)
    assert 'data-warning="partial"' in status_html(with_text)
