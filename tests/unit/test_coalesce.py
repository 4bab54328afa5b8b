"""Frame coalescing of renders: deltas once per frame, structure at once, nothing lost."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from app.state.actions import Action, EventReceived, StopRequested
from app.state.reducer import reduce
from app.state.state import ChatState, ErrorInfo, MessageState, RunState, State
from app.state.store import Store
from app.state.trace import RunTrace
from app.ui.coalesce import FrameCoalescer, is_structural
from app.wire.protocol import ParsedEvent, parse_event


def event(event_type: str, seq: int, **fields: Any) -> EventReceived:
    payload = {"type": event_type, "runId": "r1", "seq": seq, "done": False, **fields}
    parsed = parse_event(json.dumps(payload))
    assert isinstance(parsed, ParsedEvent)
    return EventReceived("r1", 1.0, parsed.event)


def streaming() -> State:
    run = RunState("r1", "c1", status="receiving", trace=RunTrace("r1"))
    chat = ChatState(
        "c1",
        messages=(MessageState("a1", "assistant", run_ids=("r1",)),),
        runs={"r1": run},
        live_runs=("r1",),
        loaded=True,
    )
    return State(
        chats={"c1": chat, "c2": ChatState("c2")}, chat_order=("c1", "c2"), active_chat_id="c1"
    )


class Harness:
    """A store with a coalescer whose frames run only when the test says so."""

    def __init__(self) -> None:
        self.frames: list[Callable[[], None]] = []
        self.rendered: list[str] = []
        self.store: Store[State, Action] = Store(streaming(), reduce)
        self.coalescer = FrameCoalescer(self.frames.append, self._render)
        self.store.subscribe(self.coalescer.on_change)

    def _render(self, state: State) -> None:
        run = state.runs.get("r1")
        self.rendered.append("" if run is None else f"{run.status}:{run.text}")

    def frame(self) -> None:
        pending, self.frames[:] = list(self.frames), []
        for callback in pending:
            callback()


def test_deltas_render_once_per_frame_with_everything_applied() -> None:
    h = Harness()
    h.store.dispatch(event("text", 1, text="a"))  # opens the text part: rendered at once
    assert h.rendered == ["receiving:a"]
    h.store.dispatch(event("text", 2, text="b"))
    h.store.dispatch(event("text", 3, text="c"))
    assert (h.rendered, len(h.frames)) == (["receiving:a"], 1)  # one frame asked for
    h.frame()
    assert h.rendered == ["receiving:a", "receiving:abc"]
    h.frame()
    assert h.rendered == ["receiving:a", "receiving:abc"]  # nothing new: no render


def test_structural_changes_render_at_once_and_pending_deltas_come_with_them() -> None:
    h = Harness()
    h.store.dispatch(event("text", 1, text="a"))  # a new part: structural
    h.rendered.clear()
    h.store.dispatch(event("text", 2, text="b"))
    h.store.dispatch(StopRequested("r1", 2.0))
    assert h.rendered == ["cancelling:ab"]
    assert len(h.frames) == 1
    h.frame()
    assert h.rendered == ["cancelling:ab"]  # the frame finds nothing left to render


def test_flush_renders_the_latest_state() -> None:
    h = Harness()
    h.coalescer.flush()
    assert h.rendered == []
    h.store.dispatch(event("text", 1, text="a"))
    h.coalescer.flush()
    assert h.rendered[-1] == "receiving:a"


def _with_run(state: State, **changes: Any) -> State:
    chat = state.chats["c1"]
    run = replace(chat.runs["r1"], **changes)
    return replace(state, chats={**state.chats, "c1": replace(chat, runs={"r1": run})})


BASE = reduce(streaming(), event("text", 1, text="a"))
TOOL = reduce(BASE, event("tool_call_started", 2, toolCallId="t", toolName="n"))
IMAGE = reduce(BASE, event("image_generation_started", 2, imageId="i", prompt="p"))
CONTINUATION = reduce(BASE, event("continuation_transition", 2, mode="cursor", recovered=False))

STRUCTURE = [
    pytest.param(BASE, reduce(BASE, event("text", 2, text="b")), False, id="text-delta"),
    pytest.param(BASE, reduce(BASE, event("thinking_start", 2)), True, id="new-part"),
    pytest.param(
        TOOL,
        reduce(TOOL, event("tool_call_arguments_delta", 3, toolCallId="t", delta="{")),
        False,
        id="tool-arguments-delta",
    ),
    pytest.param(
        TOOL,
        reduce(TOOL, event("tool_result", 3, toolCallId="t", result=1)),
        True,
        id="tool-status-change",
    ),
    pytest.param(
        IMAGE,
        reduce(IMAGE, event("image_generation_failed", 3, imageId="i", error="x")),
        True,
        id="image-status-change",
    ),
    pytest.param(
        CONTINUATION,
        reduce(CONTINUATION, event("continuation_transition", 3, mode="cursor", recovered=True)),
        True,
        id="continuation-recovered",
    ),
    pytest.param(BASE, _with_run(BASE, status="completed"), True, id="status-change"),
    pytest.param(BASE, _with_run(BASE, cancel="pending"), True, id="cancel-change"),
    pytest.param(BASE, replace(BASE, active_chat_id="c2"), True, id="chat-switch"),
    pytest.param(BASE, replace(BASE, last_error=ErrorInfo("e", "m")), True, id="error"),
    pytest.param(BASE, replace(BASE, composer_draft="p"), True, id="draft"),
    pytest.param(
        BASE,
        replace(BASE, chats={**BASE.chats, "c2": ChatState("c2", "T")}),
        True,
        id="chat-title-in-list",
    ),
    pytest.param(
        BASE,
        replace(BASE, chats={**BASE.chats, "c3": ChatState("c3")}),
        False,
        id="unlisted-background-chat",
    ),
    pytest.param(
        BASE,
        reduce(
            BASE,
            event(
                "context_info",
                2,
                usedTokens=1,
                maxTokens=2,
                ratio=0.5,
                severity="ok",
                compactionRecommended=False,
            ),
        ),
        True,
        id="context-ring",
    ),
    pytest.param(
        replace(BASE, active_chat_id=None),
        replace(BASE, active_chat_id=None, composer_draft=""),
        False,
        id="no-chat-no-change",
    ),
    pytest.param(BASE, replace(BASE, active_chat_id="zz"), True, id="switch-to-unknown-chat"),
]


@pytest.mark.parametrize(("previous", "state", "structural"), STRUCTURE)
def test_is_structural(previous: State, state: State, structural: bool) -> None:
    assert is_structural(state, previous) is structural


def _with_chat(state: State, **changes: Any) -> State:
    chat = replace(state.chats["c1"], **changes)
    return replace(state, chats={**state.chats, "c1": chat})


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"title": "Renamed"}, id="active-chat-title"),
        pytest.param({"loaded": False}, id="loading-flag"),
        pytest.param({"messages": ()}, id="messages-removed"),
        pytest.param(
            {"messages": (replace(BASE.chats["c1"].messages[0], server_id="srv"),)},
            id="message-server-id",
        ),
    ],
)
def test_chat_level_changes_are_structural(changes: dict[str, Any]) -> None:
    assert is_structural(_with_chat(BASE, **changes), BASE)


def test_new_message_tuple_with_same_structure_is_not_structural() -> None:
    same = _with_chat(BASE, messages=tuple(BASE.chats["c1"].messages))
    rebuilt = _with_chat(BASE, messages=(replace(BASE.chats["c1"].messages[0]),))
    assert not is_structural(same, BASE)
    assert not is_structural(rebuilt, BASE)


def test_a_new_run_in_the_active_chat_is_structural() -> None:
    chat = BASE.chats["c1"]
    extra = RunState("r2", "c1", trace=RunTrace("r2"))
    chat = replace(chat, runs={**chat.runs, "r2": extra})
    state = replace(BASE, chats={**BASE.chats, "c1": chat})
    assert is_structural(state, BASE)
