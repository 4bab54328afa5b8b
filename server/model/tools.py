"""The tools a real model is offered (``toolIntent: true``): calculator, clock, image painter,
and the tools of the MCP servers that are up (``server/tools``: approval, at most once).

``run_tool(call, image_id)`` yields the contract events a tool shows on its way (an image's
``image_generation_*``) and ends with one :class:`ToolOutcome`; the agentic loop turns that into
the ``tool_result`` event and the model's next input. A tool never raises for bad input: a
wrong name, bad arguments or a failed evaluation is an outcome with ``is_error``.
"""

from __future__ import annotations

import ast
import asyncio
import math
import operator
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import JsonValue

from app.wire.protocol import (
    ImageGenerationCompletedEvent,
    ImageGenerationStartedEvent,
    StreamEvent,
    ToolEffect,
)
from server.model.png import paint_landscape, png_data_url
from server.model.providers.base import ToolCall, ToolSpec
from server.runs.drafts import draft
from server.tools.calls import CallOutcome, ToolRoom, run_call
from server.tools.client_tools import offered_client_tools, run_client_call, runs_in_client

MAX_EXPRESSION_CHARS = 1000
MAX_INT_BITS = 4096


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool returned: a JSON value, or an error the model is told about."""

    result: JsonValue
    is_error: bool = False
    effect: ToolEffect | None = None  # a tool of an MCP server: what it did (SPEC §12)


CALCULATOR = ToolSpec(
    name="calculator",
    description=(
        "Evaluate an arithmetic expression exactly: numbers, + - * / // % ** and parentheses, "
        "sqrt(x), abs(x), round(x[, n]), pi, e. Use it for any arithmetic."
    ),
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "e.g. (17 + 25) * 3"}},
        "required": ["expression"],
        "additionalProperties": False,
    },
)
CURRENT_TIME = ToolSpec(
    name="current_time",
    description="The current date and time (UTC and the server's local time).",
    parameters={"type": "object", "properties": {}, "additionalProperties": False},
)
GENERATE_IMAGE = ToolSpec(
    name="generate_image",
    description="Paint a small landscape picture for the user from a short prompt.",
    parameters={
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": "what to paint"}},
        "required": ["prompt"],
        "additionalProperties": False,
    },
)
TOOLS: tuple[ToolSpec, ...] = (CALCULATOR, CURRENT_TIME, GENERATE_IMAGE)


def offered(room: ToolRoom | None) -> tuple[ToolSpec, ...]:
    """The built-ins, the tools of the MCP servers that are up now, and those the page runs."""
    if room is None:
        return TOOLS
    mcp = tuple(
        ToolSpec(tool.qualified_name, f"[{tool.server}] {tool.description}", tool.parameters)
        for tool in room.servers.tools()
    )
    return (*TOOLS, *mcp, *client_specs(room))


def client_specs(room: ToolRoom | None) -> tuple[ToolSpec, ...]:
    """The tools the run's page runs (SPEC §13), as the model is offered them."""
    return tuple(
        ToolSpec(tool.name, tool.description, tool.parameters)
        for tool in offered_client_tools(room)
    )


async def run_tool(
    call: ToolCall, image_id: str, room: ToolRoom | None = None
) -> AsyncIterator[StreamEvent | ToolOutcome]:
    """Run one tool call: its events, then exactly one outcome."""
    if room is not None and runs_in_client(room, call.name):
        async for step in run_client_call(room, call.id, call.name, dict(call.arguments)):
            yield ToolOutcome(step.result, step.is_error) if isinstance(step, CallOutcome) else step
        return
    mcp_tool = room.servers.find(call.name) if room is not None else None
    if room is not None and mcp_tool is not None:
        async for step in run_call(room, mcp_tool, call.id, dict(call.arguments)):
            if isinstance(step, CallOutcome):
                yield ToolOutcome(step.result, step.is_error, step.effect)
            else:
                yield step
        return
    if call.name == GENERATE_IMAGE.name:
        async for item in _generate_image(call, image_id):
            yield item
        return
    simple = _SIMPLE_TOOLS.get(call.name)
    if simple is None:
        down = f" (its MCP server is down: {_why_down(room, call.name)})" if room else ""
        yield ToolOutcome({"error": f"unknown tool {call.name!r}{down}"}, is_error=True)
        return
    yield simple(call.arguments)


def _why_down(room: ToolRoom, name: str) -> str:
    server = name.split("__", 1)[0]
    return room.servers.down().get(server, "not configured")


# --- calculator ------------------------------------------------------------------------------


class CalculatorError(ValueError):
    """An expression the calculator refuses or cannot evaluate."""


Number = int | float
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def _round(value: Number, digits: Number = 0) -> Number:
    if not isinstance(digits, int) or abs(digits) > 100:
        raise CalculatorError("round's digits must be an integer between -100 and 100")
    return round(value, digits) if digits else round(value)


_FUNCTIONS: dict[str, Callable[..., Number]] = {"sqrt": math.sqrt, "abs": abs, "round": _round}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


def calculate(expression: str) -> Number:
    """Evaluate arithmetic by walking its syntax tree (never ``eval``); bounded in size."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not an arithmetic expression: {exc.msg}") from exc
    return _checked(_evaluate(tree.body))


def _evaluate(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _checked(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _checked(_UNARY[type(node.op)](_evaluate(node.operand)))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if _is_function_call(node):
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        return _checked(_FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args)))
    raise CalculatorError(f"not allowed in arithmetic: {ast.unparse(node)!r}")


def _check_power(base: Number, exponent: Number) -> None:
    # NOTE: an integer power is sized before it is computed: 9 ** 9 ** 9 must not run.
    if not (isinstance(base, int) and isinstance(exponent, int)) or exponent <= 0:
        return
    if abs(base) > 1 and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS:
        raise CalculatorError("the result is too large")


def _is_function_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
        and 1 <= len(node.args) <= 2
    )


def _checked(value: object) -> Number:
    if isinstance(value, complex):
        raise CalculatorError("the result is not a real number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculatorError("the result is not a number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise CalculatorError("the result is too large")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("the result is not finite")
    return value


def _calculator(arguments: Mapping[str, Any]) -> ToolOutcome:
    expression = arguments.get("expression")
    if not isinstance(expression, str):
        return ToolOutcome({"error": "'expression' must be a string"}, is_error=True)
    try:
        value = calculate(expression)
    except (CalculatorError, ArithmeticError, TypeError, ValueError) as exc:
        return ToolOutcome({"expression": expression, "error": str(exc)}, is_error=True)
    return ToolOutcome({"expression": expression, "result": value})


# --- clock -----------------------------------------------------------------------------------


def _current_time(_arguments: Mapping[str, Any]) -> ToolOutcome:
    now = datetime.now(UTC)
    local = now.astimezone()
    return ToolOutcome(
        {
            "utc": now.isoformat(timespec="seconds"),
            "local": local.isoformat(timespec="seconds"),
            "timezone": local.tzname() or time.strftime("%Z"),
            "weekday": local.strftime("%A"),
        }
    )


_SIMPLE_TOOLS: dict[str, Callable[[Mapping[str, Any]], ToolOutcome]] = {
    CALCULATOR.name: _calculator,
    CURRENT_TIME.name: _current_time,
}


# --- image -----------------------------------------------------------------------------------


async def painted_image(image_id: str, prompt: str) -> StreamEvent:
    """Paint the picture (off the event loop) and announce it."""
    png = await asyncio.to_thread(paint_landscape, prompt)
    return draft(
        ImageGenerationCompletedEvent,
        image_id=image_id,
        url=png_data_url(png),
        alt=f"A landscape for: {prompt}",
    )


async def _generate_image(
    call: ToolCall, image_id: str
) -> AsyncIterator[StreamEvent | ToolOutcome]:
    prompt = call.arguments.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        yield ToolOutcome({"error": "'prompt' must be a non-empty string"}, is_error=True)
        return
    yield draft(ImageGenerationStartedEvent, image_id=image_id, tool_call_id=call.id, prompt=prompt)
    yield await painted_image(image_id, prompt)
    yield ToolOutcome({"imageId": image_id, "shown": "the image is shown to the user"})
