"""The pure state of the model's code run by the page (app/state/client_tool.py), and its card."""

from __future__ import annotations

from typing import Any

import pytest

from app.state.client_tool import (
    DECLINED,
    MAX_RESULT_CHARS,
    ClientCall,
    CodeSettings,
    ended_calls,
    parse_kept,
    result_of,
    settings_of,
    waiting_call,
    waiting_calls,
    with_settings,
)
from app.state.code_run import Chunk, CodeRunState, OutFile
from app.state.decisions import waits_on_a_tool
from app.state.state import ChatState, RunState, RunStatus, State
from app.ui.code_settings import settings_html
from app.ui.tool_card import tool_call_html
from app.wire.parts import ToolCallPart, fold_all
from app.wire.protocol import (
    ToolCallCompletedEvent,
    ToolCallStartedEvent,
    ToolClientRequestedEvent,
    ToolResultEvent,
)

CODE = "print(6 * 7)"


def _events(result: bool = False) -> list[Any]:
    common = {"run_id": "run_1", "seq": 1, "done": False}
    events: list[Any] = [
        ToolCallStartedEvent(**common, tool_call_id="c1", tool_name="python"),
        ToolCallCompletedEvent(
            **common, tool_call_id="c1", tool_name="python", arguments={"code": CODE}
        ),
        ToolClientRequestedEvent(
            **common, tool_call_id="c1", tool_name="python", arguments={"code": CODE}
        ),
    ]
    if result:
        events.append(ToolResultEvent(**common, tool_call_id="c1", result={"stdout": "42\n"}))
    return events


def _state(status: RunStatus = "receiving", result: bool = False, live: bool = True) -> State:
    run = RunState(run_id="run_1", chat_id="chat_1", status=status, parts=fold_all(_events(result)))
    chat = ChatState(chat_id="chat_1", runs={"run_1": run}, live_runs=("run_1",) if live else ())
    return State(chats={"chat_1": chat}, active_chat_id="chat_1")


def test_tool_client_requested_marks_the_call_as_the_pages() -> None:
    (part,) = fold_all(_events())
    assert isinstance(part, ToolCallPart)
    assert (part.runs_in, part.status, dict(part.arguments)) == (
        "client",
        "completed",
        {"code": CODE},
    )


def test_a_call_waits_for_the_page_while_its_run_is_live() -> None:
    call = ClientCall("chat_1", "run_1", "c1", CODE)
    assert list(waiting_calls(_state())) == [call]
    assert waiting_call(_state(), "run_1", "c1") == call
    assert ended_calls([call], _state()) == []


@pytest.mark.parametrize(
    ("state", "why"),
    [
        pytest.param(_state(result=True), "its result arrived", id="result-arrived"),
        pytest.param(_state("cancelling"), "Stop was pressed", id="stopping"),
        pytest.param(_state("cancelled", live=False), "the run was stopped", id="stopped"),
        pytest.param(_state("failed", live=False), "the run failed", id="failed"),
    ],
)
def test_a_call_no_longer_waits_and_its_code_stops_when(state: State, why: str) -> None:
    call = ClientCall("chat_1", "run_1", "c1", CODE)
    assert list(waiting_calls(state)) == [], why
    assert ended_calls([call], state) == [call], why


def test_the_result_posted_is_the_output_and_an_error_unless_done() -> None:
    done = CodeRunState(
        1,
        status="done",
        output=(Chunk("stdout", "42\n"), Chunk("stderr", "careful\n")),
        files=(OutFile("plot.png", "image/png", 10),),
    )
    assert result_of(done) == (
        {"state": "done", "stdout": "42\n", "stderr": "careful\n", "files": ["/mnt/out/plot.png"]},
        False,
    )
    failed = CodeRunState(1, status="error", traceback="Traceback…\nZeroDivisionError: division")
    result, is_error = result_of(failed)
    assert is_error and result["error"] == "ZeroDivisionError: division"  # type: ignore[index,call-overload]
    killed = CodeRunState(1, status="killed", limit="time", time_limit_ms=10_000)
    result, is_error = result_of(killed)
    assert is_error and "time limit of 10 s" in str(result["error"])  # type: ignore[index,call-overload]


def test_a_flood_of_output_is_cut_and_the_model_is_told() -> None:
    flood = CodeRunState(1, status="done", output=(Chunk("stdout", "x" * (MAX_RESULT_CHARS + 5)),))
    result, _ = result_of(flood)
    assert isinstance(result, dict)
    assert len(str(result["stdout"])) == MAX_RESULT_CHARS and "cut" in str(result["truncated"])


def test_declining_tells_the_model() -> None:
    assert DECLINED["declined"] is True and "chose not to run" in str(DECLINED["error"])


@pytest.mark.parametrize(
    ("kept", "expected"),
    [
        pytest.param({}, CodeSettings(), id="nothing-kept"),
        pytest.param({"chat_1": {"autoRun": True}}, CodeSettings(True), id="auto-run"),
        pytest.param({"chat_1": {"timeLimitS": 60}}, CodeSettings(False, 60_000), id="limit"),
        pytest.param({"chat_1": {"timeLimitS": 7}}, CodeSettings(), id="limit-not-offered"),
        pytest.param({"chat_1": "junk"}, CodeSettings(), id="malformed"),
        pytest.param({"chat_2": {"autoRun": True}}, CodeSettings(), id="another-chat"),
    ],
)
def test_a_chats_settings_from_what_the_device_keeps(
    kept: dict[str, Any], expected: CodeSettings
) -> None:
    assert settings_of(kept, "chat_1") == expected


def test_settings_round_trip_and_defaults_are_not_kept() -> None:
    kept = with_settings({"other": {"autoRun": True}}, "chat_1", CodeSettings(True, 120_000))
    assert settings_of(kept, "chat_1") == CodeSettings(True, 120_000)
    assert with_settings(kept, "chat_1", CodeSettings()) == {"other": {"autoRun": True}}
    assert parse_kept("not json") == {} and parse_kept("[1]") == {} and parse_kept(None) == {}


def test_the_settings_controls_show_the_chats_settings() -> None:
    html = settings_html(CodeSettings(True, 60_000))
    assert '<option value="60" selected>60 s</option>' in html
    assert 'name="auto-run-code" checked' in html
    assert "checked" not in settings_html(CodeSettings())


def test_the_card_of_a_waiting_call_shows_the_code_with_run_and_dont_run() -> None:
    (part,) = fold_all(_events())
    assert isinstance(part, ToolCallPart)
    html = tool_call_html(part, run_live=True)
    assert 'data-runs-in="client"' in html
    assert '<code class="language-python">print(6 * 7)</code>' in html
    assert 'data-action="approve-tool"' in html and 'data-action="deny-tool"' in html
    assert 'name="auto-run-code"' in html and "Waits for this page to run it" in html
    ended = tool_call_html(part, run_live=False)
    assert "approve-tool" not in ended and "Not run" in ended
    (finished,) = fold_all(_events(result=True))
    assert isinstance(finished, ToolCallPart)
    assert "approve-tool" not in tool_call_html(finished, run_live=True)


def test_the_pages_idle_timeout_waits_while_a_call_waits_for_a_page() -> None:
    assert waits_on_a_tool(fold_all(_events()))
    assert not waits_on_a_tool(fold_all(_events(result=True)))
