"""Chatting with a real model in Chromium: the reference server streams from an
OpenAI-compatible provider (the fake in ``tests.provider_fake``, with its scripted model)
through the openai SDK, and runs the model's tool calls."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import LiveServer, serve
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
