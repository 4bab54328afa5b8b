"""Chatting with a real model in Chromium: the reference server streams from an
OpenAI-compatible provider (the fake in ``tests.provider_fake``, with its scripted model)
through the openai SDK, and runs the model's tool calls."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import BOOT_TIMEOUT_MS, LiveServer, serve
from tests.e2e.scenarios import send

ANSWER_TIMEOUT_MS = 30_000
MODEL = "fake-model:0.5b"


@pytest.fixture(scope="module")
def fake_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("fake-provider")
    with serve(workdir, ["tests.provider_fake"], ready_path="/__fake__/requests") as fake:
        yield fake


@pytest.fixture(scope="module")
def model_server(
    tmp_path_factory: pytest.TempPathFactory, fake_provider: LiveServer
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("model-server")
    arguments = ["server", "--db", str(workdir / "riacho.db"), "--provider", "openai-chat"]
    arguments += ["--base-url", f"{fake_provider.url}/v1", "--model", MODEL]
    with serve(workdir, arguments) as server:
        yield server


@pytest.fixture
def page_server(model_server: LiveServer) -> LiveServer:
    return model_server


def test_chat_with_a_model_runs_its_tool_and_answers_a_follow_up(
    app: Page, fake_provider: LiveServer
) -> None:
    expect(app.locator("select[name=model]")).to_have_value(MODEL)
    app.locator("[data-action=tools]").click()

    answer = send(app, "What is 12*7?", press_enter=True)
    expect(answer).to_have_attribute("data-status", "completed", timeout=ANSWER_TIMEOUT_MS)
    call = answer.locator("[data-tool-call-id]")
    expect(call).to_have_attribute("data-tool-status", "done")
    expect(call).to_contain_text("calculator")
    expect(call).to_contain_text("84")
    expect(answer.locator(".message-text")).to_have_text("The calculator says 84.")

    follow_up = send(app, "Thanks! What did I ask?", press_enter=True)
    expect(follow_up).to_have_attribute("data-status", "completed", timeout=ANSWER_TIMEOUT_MS)
    expect(follow_up.locator(".message-text")).to_have_text(
        "You asked: “Thanks! What did I ask?”. Before that you asked: “What is 12*7?”."
    )

    calls = [seen["body"] for seen in json.loads(fake_provider.api("GET", "/__fake__/requests"))]
    assert [body["model"] for body in calls] == [MODEL] * 3
    tool_result = calls[1]["messages"][-1]
    assert tool_result["role"] == "tool"
    assert json.loads(tool_result["content"]) == {"expression": "12*7", "result": 84}
    assert [m["role"] for m in calls[2]["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert calls[2]["messages"][3]["content"] == "The calculator says 84."


def test_a_slow_first_word_is_waited_for_as_long_as_the_server_waits_showing_the_seconds(
    app: Page, model_server: LiveServer
) -> None:
    # NOTE: the page's own timeouts are 1 s here; the server waits 70 s for this model's first
    # output (its connect and first-byte timeouts) and says so in /api/models: the page waits
    # longer than that, so a model that takes 3 s to start is not failed by the page.
    app.goto(model_server.url + "/?firstEventTimeoutMs=1000&idleTimeoutMs=1000")
    expect(app.locator("html[data-ready]")).to_be_attached(timeout=BOOT_TIMEOUT_MS)

    answer = send(app, "Please take your time")

    expect(answer.locator(".elapsed")).to_have_text(re.compile(r"^[12] s$"))
    expect(answer).to_have_attribute("data-status", "completed", timeout=ANSWER_TIMEOUT_MS)
    expect(answer.locator(".message-text")).to_have_text("You asked: “Please take your time”.")
    expect(answer.locator(".elapsed")).to_have_count(0)
