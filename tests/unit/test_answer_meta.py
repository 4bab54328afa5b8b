"""Each answer's model and time (issue 37): from the server only, the same live and reloaded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from app.state.actions import EventReceived, RunStarted
from app.state.history import run_from_message
from app.state.runs import new_run, receive
from app.state.state import MessageState, RunState
from app.ui import answer_meta
from app.ui.answer_meta import answer_meta_html
from app.ui.render import message_foot_html
from app.wire.api import MessageOut
from app.wire.protocol import ParsedEvent, parse_event
from tests.unit.html_tree import parse_html

STORED = "2026-12-06T14:32:59.777Z"


@pytest.fixture(autouse=True)
def zone() -> Iterator[None]:
    answer_meta.use_zone(timezone(timedelta(hours=-3)))
    yield
    answer_meta.use_zone(UTC)


def _event(event_type: str, seq: int, **fields: Any) -> EventReceived:
    payload = {"type": event_type, "runId": "r1", "seq": seq, "done": False, **fields}
    parsed = parse_event(json.dumps(payload))
    assert isinstance(parsed, ParsedEvent), parsed
    return EventReceived("r1", float(seq), parsed.event)


def _live(*events: EventReceived) -> RunState:
    run = new_run(RunStarted("r1", 1.0, "c1", "a1", "hi", user_message_id="u1"))
    for action in events:
        run, _ = receive(run, action)
    return run


def _reloaded(**fields: Any) -> RunState:
    out = MessageOut.model_validate(
        {"id": "m1", "role": "assistant", "text": "Hi", "status": "completed", "runId": "r1"}
        | fields
    )
    return run_from_message("c1", out)


def test_a_live_answer_shows_the_time_and_model_its_terminal_event_gives() -> None:
    run = _live(
        _event("text", 1, text="Hi"),
        _event(
            "done", 2, messageId="m1", stopReason="stop", createdAt=STORED, modelId="riacho-demo"
        ),
    )
    meta = parse_html(answer_meta_html(run))
    (time,) = [el for el in meta.iter() if el.tag == "time"]
    assert meta.text == "riacho-demo · 11:32", "the device's zone (UTC-3), to the minute"
    assert time.get("datetime") == "2026-12-06T11:32:00-03:00"
    assert time.get("title") == "Sunday, 06 December 2026, 11:32"


def test_the_live_answer_and_its_reload_render_the_same_foot() -> None:
    """The stamp in the event (ms) and the chat read (µs) differ in text, not in instant."""
    live = _live(
        _event("text", 1, text="Hi"),
        _event(
            "done", 2, messageId="m1", stopReason="stop", createdAt=STORED, modelId="riacho-demo"
        ),
    )
    reloaded = _reloaded(createdAt="2026-12-06T14:32:59.777000Z", modelId="riacho-demo")
    message = MessageState("m1", "assistant", server_id="m1", run_ids=("r1",))
    assert answer_meta_html(live) == answer_meta_html(reloaded) != ""
    assert answer_meta_html(live) in message_foot_html(message, live), "shown under the answer"


def test_a_streaming_answer_shows_no_time_of_the_pages_own() -> None:
    assert answer_meta_html(_live(_event("text", 1, text="Hi"))) == ""


def test_a_failed_answer_is_stamped_by_its_error_event() -> None:
    run = _live(_event("error", 1, error="boom", createdAt=STORED, modelId="riacho-mini"))
    assert parse_html(answer_meta_html(run)).text == "riacho-mini · 11:32"


def test_each_answer_names_its_own_model() -> None:
    first = _reloaded(createdAt=STORED, modelId="riacho-mini")
    second = _reloaded(createdAt=STORED, modelId="riacho-demo")
    assert "riacho-mini" in answer_meta_html(first)
    assert "riacho-demo" in answer_meta_html(second)


def test_the_model_name_is_escaped_and_a_bad_time_is_left_out() -> None:
    run = _reloaded(modelId="<b>x</b>")
    html = answer_meta_html(RunState("r1", "c1", answered_at="not a time", model_id="<b>x</b>"))
    assert "<b>" not in html and "&lt;b&gt;" in html
    assert "<time" not in html
    assert "&lt;b&gt;" in answer_meta_html(run)


def test_a_time_without_a_zone_is_not_guessed() -> None:
    assert answer_meta.answer_time("2026-12-06T14:32:59") is None
    assert answer_meta.answer_time(STORED) == datetime(
        2026, 12, 6, 11, 32, tzinfo=timezone(timedelta(hours=-3))
    )
