"""The tools offered to real models: a safe calculator, the clock, the image painter."""

from __future__ import annotations

from datetime import datetime

import pytest

from server.model.providers.base import ToolCall
from server.model.tools import CalculatorError, ToolOutcome, calculate, run_tool


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        pytest.param("2 + 2", 4, id="sum"),
        pytest.param("(17 + 25) * 3", 126, id="parentheses"),
        pytest.param("7 / 2", 3.5, id="true-division"),
        pytest.param("7 // 2", 3, id="floor-division"),
        pytest.param("-7 % 3", 2, id="modulo-of-negative"),
        pytest.param("2 ** 10", 1024, id="power"),
        pytest.param("2 ** -1", 0.5, id="negative-power"),
        pytest.param("sqrt(16)", 4.0, id="sqrt"),
        pytest.param("round(2.567, 1)", 2.6, id="round-digits"),
        pytest.param("abs(-3) + pi * 0", 3.0, id="abs-and-constant"),
        pytest.param("  1_000 * 3 ", 3000, id="underscores-and-spaces"),
    ],
)
def test_calculator_evaluates_arithmetic(expression: str, value: float) -> None:
    assert calculate(expression) == value


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param("__import__('os').system('true')", "not allowed", id="call-of-a-builtin"),
        pytest.param("().__class__", "not allowed", id="attribute-access"),
        pytest.param("x + 1", "not allowed", id="unknown-name"),
        pytest.param("'a' * 3", "not allowed", id="string"),
        pytest.param("True + 1", "not allowed", id="boolean"),
        pytest.param("[1, 2]", "not allowed", id="list"),
        pytest.param("1 if 1 else 2", "not allowed", id="conditional"),
        pytest.param("9 ** 9 ** 9", "too large", id="tower-refused-before-computing"),
        pytest.param("10 ** 5000", "too large", id="big-power"),
        pytest.param("round(10 ** 100, -10 ** 18)", "digits", id="huge-round-digits"),
        pytest.param("(-8) ** 0.5", "not a real number", id="complex-result"),
        pytest.param("1e308 * 10", "not finite", id="overflow-to-infinity"),
        pytest.param("2 +", "not an arithmetic expression", id="syntax-error"),
        pytest.param("1" * 1001, "longer than", id="too-long"),
    ],
)
def test_calculator_refuses_what_is_not_bounded_arithmetic(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError, match=message):
        calculate(expression)


async def _outcome(name: str, arguments: dict[str, object]) -> tuple[list[str], ToolOutcome]:
    events, outcome = [], None
    call = ToolCall("call_1", name, arguments, "")
    async for item in run_tool(call, "img_1"):
        if isinstance(item, ToolOutcome):
            outcome = item
        else:
            events.append(item.type)
    assert outcome is not None
    return events, outcome


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        pytest.param(
            "calculator", {"expression": "1/0"}, "division by zero", id="division-by-zero"
        ),
        pytest.param("calculator", {"expression": 42}, "must be a string", id="wrong-type"),
        pytest.param("calculator", {}, "must be a string", id="missing-expression"),
        pytest.param("generate_image", {"prompt": " "}, "non-empty", id="empty-prompt"),
        pytest.param("web_search", {"q": "x"}, "unknown tool 'web_search'", id="unknown-tool"),
    ],
)
async def test_a_bad_call_is_an_error_outcome_not_an_exception(
    name: str, arguments: dict[str, object], error: str
) -> None:
    events, outcome = await _outcome(name, arguments)
    assert events == []
    assert outcome.is_error is True
    assert isinstance(outcome.result, dict) and error in str(outcome.result["error"])


async def test_current_time_answers_parseable_timestamps() -> None:
    _, outcome = await _outcome("current_time", {})
    assert isinstance(outcome.result, dict) and outcome.is_error is False
    utc = datetime.fromisoformat(str(outcome.result["utc"]))
    assert utc.utcoffset() is not None and utc.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert {"local", "timezone", "weekday"} <= set(outcome.result)


async def test_generate_image_shows_the_image_then_answers() -> None:
    events, outcome = await _outcome("generate_image", {"prompt": "a river"})
    assert events == ["image_generation_started", "image_generation_completed"]
    assert outcome.result == {"imageId": "img_1", "shown": "the image is shown to the user"}
