"""Chats, attempts, reloads and lost connections, in real Chromium (SPEC §5, §6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from tests.e2e import scenarios
from tests.e2e.conftest import BOOT_TIMEOUT_MS, LiveServer, PageGuard
from tests.e2e.scenarios import Step, StreamRequest, answer_of, done, send, sleep, text

STREAM_MS = 20_000


def test_switching_chats_never_mixes_answers_and_coming_back_shows_the_truth(
    riacho: Page, server: LiveServer
) -> None:
    seen = scenarios.on_next_stream(
        riacho, server, lambda _: [text("Alpha "), sleep(1500), text("finished."), done()]
    )
    first = send(riacho, "First chat")
    expect(first.locator(".message-text")).to_contain_text("Alpha", timeout=STREAM_MS)
    chat_a = seen[0].chat_id
    assert chat_a is not None

    riacho.locator("[data-action=new-chat]").click()
    second = send(riacho, "Second chat")
    expect(second).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(riacho.locator("[data-role=assistant]")).to_have_count(1)
    expect(riacho.locator(".message-text")).not_to_contain_text("Alpha")

    riacho.locator(f"#chat-list [data-chat-id='{chat_a}']").click()
    expect(riacho.locator(f"[data-chat-id='{chat_a}']")).to_have_attribute("aria-current", "true")
    answer = answer_of(riacho, seen[0].run_id)
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("Alpha finished.")


def test_reload_while_the_server_still_generates_reattaches_and_completes(
    riacho: Page, server: LiveServer, guard: PageGuard
) -> None:
    # NOTE: the pause outlasts a reload and a boot, so the reloaded page finds the run still
    # going: it must re-attach (read the run's events) and see the text grow, not a history.
    seen = scenarios.on_next_stream(
        riacho,
        server,
        lambda _: [text("Before reload. "), sleep(7000), text("After reload."), done()],
    )
    answer = send(riacho, "Survive a reload")
    expect(answer.locator(".message-text")).to_contain_text("Before reload.", timeout=STREAM_MS)
    run_id = seen[0].run_id

    with riacho.expect_request(f"**/api/runs/{run_id}/events*", timeout=BOOT_TIMEOUT_MS):
        riacho.reload()
        riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    answer = answer_of(riacho, run_id)
    expect(answer.locator(".message-text")).to_have_text("Before reload.")
    assert answer.get_attribute("data-status") != "completed"
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("Before reload. After reload.")
    expect(riacho.locator("[data-role=user]")).to_have_text(["Survive a reload"])
    assert scenarios.run_record(server, run_id)["status"] == "completed"


def test_lost_connection_offers_resume_which_finishes_the_same_run(
    riacho: Page, server: LiveServer, context: BrowserContext
) -> None:
    seen = scenarios.on_next_stream(
        riacho,
        server,
        # NOTE: the drop comes 2 s after "One." so the test is offline before it, even when slow.
        lambda _: [text("One. "), sleep(2000), {"detach": True}, sleep(300), text("Two."), done()],
    )
    answer = send(riacho, "Cut me off")
    expect(answer.locator(".message-text")).to_contain_text("One.", timeout=STREAM_MS)
    context.set_offline(True)  # NOTE: offline, the client must not try its automatic resume
    expect(answer).to_have_attribute("data-status", "interrupted", timeout=STREAM_MS)
    expect(answer.locator("[data-warning=partial]")).to_be_visible()
    expect(riacho.locator("[data-error-code]")).to_have_count(0)
    run_id = answer.get_attribute("data-run-id")

    context.set_offline(False)
    answer.locator("[data-action=resume]").click()

    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("One. Two.")
    assert answer.get_attribute("data-run-id") == run_id == seen[0].run_id


def test_escape_stops_the_answer(riacho: Page) -> None:
    answer = send(riacho, "Tell me something long")
    expect(answer).to_have_attribute("data-status", "receiving", timeout=STREAM_MS)
    riacho.keyboard.press("Escape")
    expect(answer).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(answer.locator("[data-cancel=confirmed]")).to_have_count(1)


def test_regenerate_keeps_every_attempt_and_never_joins_them(
    riacho: Page, server: LiveServer
) -> None:
    scenarios.on_next_stream(riacho, server, lambda _: [text("First attempt."), done()])
    first = send(riacho, "Try twice")
    expect(first).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    # NOTE: the message keeps its id while the attempt it shows changes.
    message_id = first.get_attribute("data-message-id")
    answer = riacho.locator(f'[data-role=assistant][data-message-id="{message_id}"]')

    scenarios.on_next_stream(riacho, server, _second_attempt)
    answer.locator("[data-action=regenerate]").click()
    expect(answer).to_have_attribute("data-attempt", "2", timeout=STREAM_MS)
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("Second attempt.")

    answer.locator("[data-action=attempt-prev]").click()
    expect(answer).to_have_attribute("data-attempt", "1")
    expect(answer.locator(".message-text")).to_have_text("First attempt.")
    answer.locator("[data-action=attempt-next]").click()
    expect(answer.locator(".message-text")).to_have_text("Second attempt.")
    expect(riacho.locator("[data-role=user]")).to_have_count(1)


def _second_attempt(request: StreamRequest) -> list[scenarios.Step]:
    return [text("Second attempt."), done()]


def test_an_attached_file_goes_with_the_prompt_and_a_refused_one_says_why(
    riacho: Page, guard: PageGuard
) -> None:
    files = riacho.locator("input[type=file][name=attachments]")
    files.set_input_files(
        [{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"river notes"}]
    )
    chips = riacho.locator("#attachment-list .chip")
    ready = riacho.locator("#attachment-list [data-file-state=ready]")
    expect(ready.locator(".chip-name")).to_have_text("notes.txt")
    expect(ready.locator(".chip-size")).to_have_text("11 bytes")
    with riacho.expect_request("**/api/respond/stream") as streamed:
        answer = send(riacho, "Read my notes")
    assert len(streamed.value.post_data_json["attachmentIds"]) == 1
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(chips).to_have_count(0)
    sent = riacho.locator("[data-role=user]").filter(has_text="Read my notes")
    expect(sent.locator(".chip-name")).to_have_text("notes.txt")

    uploads_before = len([r for r in guard.requests if r.endswith("/api/attachments")])
    files.set_input_files(
        [{"name": "tool.exe", "mimeType": "application/x-msdownload", "buffer": b"MZ"}]
    )
    refused = riacho.locator("#attachment-list [data-file-state=error]")
    expect(refused.locator(".chip-name")).to_have_text("tool.exe")
    expect(refused.locator(".chip-error")).to_have_text("this kind of file is not accepted")
    refused.locator("[data-action=remove-attachment]").click()
    expect(chips).to_have_count(0)
    uploads = len([r for r in guard.requests if r.endswith("/api/attachments")])
    assert uploads == uploads_before, "refused before any upload, from the server's limits"


def test_an_edited_first_prompt_stays_a_branch_after_a_reload(riacho: Page) -> None:
    brazil = send(riacho, "Name a river in Brazil")
    expect(brazil).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    riacho.locator("[data-role=user] [data-action=edit]").click()
    editor = riacho.locator("textarea[name=edit-prompt]")
    editor.fill("Name a river in Portugal")
    with riacho.expect_request("**/api/respond/stream") as sent:
        editor.press("Enter")
    portugal = answer_of(riacho, json.loads(sent.value.post_data or "{}")["runId"])
    expect(portugal).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    prompts = riacho.locator("[data-role=user] .bubble")
    expect(prompts).to_have_text(["Name a river in Portugal"])
    riacho.locator("[data-role=user] [data-action=branch-prev]").click()
    expect(prompts).to_have_text(["Name a river in Brazil"])

    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    # NOTE: one conversation on screen, the one that was (never both prompts as one)
    expect(prompts).to_have_text(["Name a river in Brazil"])
    expect(riacho.locator("[data-role=assistant]")).to_have_count(1)
    switcher = riacho.locator("[data-role=user] .switcher-label")
    expect(switcher).to_have_text("1 / 2")
    riacho.locator("[data-role=user] [data-action=branch-next]").click()
    expect(prompts).to_have_text(["Name a river in Portugal"])
    expect(switcher).to_have_text("2 / 2")
    expect(riacho.locator("[data-role=assistant]")).to_have_count(1)


ENDINGS = {  # NOTE: the scenario, and the status the answer settles in
    "length": ([text("Cut at the"), done("length")], "completed"),
    "error": (
        [text("Half an "), scenarios.error("The model is not loaded yet.", "model_cold")],
        "failed",
    ),
    "no terminal event": ([text("Part one"), {"close": "clean"}], "interrupted"),
    "done cancelled": ([text("Stopped here"), done("cancelled")], "cancelled"),
    "stop": ([text("All of it."), done()], "completed"),
}
ENDING_FOOTPRINT = """(answer) => ({
    status: answer.dataset.status,
    line: answer.querySelector('.status-line').innerText,
    hooks: [...answer.querySelectorAll('[data-warning], [data-cancel], [data-error-code]')]
        .map((e) => [e.dataset.warning, e.dataset.cancel, e.dataset.errorCode, e.innerText]),
    actions: [...answer.querySelectorAll('.message-actions [data-action]')]
        .map((e) => [e.dataset.action, e.disabled]),
    text: answer.querySelector('.message-text').innerText,
})"""


def _playing(steps: list[Step]) -> Callable[[StreamRequest], list[Step]]:
    return lambda _request: steps


def test_every_ending_shows_the_same_after_a_reload(riacho: Page, server: LiveServer) -> None:
    runs: dict[str, tuple[str, str]] = {}  # run id -> (ending, settled status)
    for name, (steps, status) in ENDINGS.items():
        seen = scenarios.on_next_stream(riacho, server, _playing(steps))
        answer = send(riacho, f"End with {name}")
        expect(answer).to_have_attribute("data-status", status, timeout=STREAM_MS)
        runs[seen[0].run_id] = (name, status)
    before: dict[str, Any] = {}
    for run_id, (_name, status) in runs.items():
        answer = answer_of(riacho, run_id)
        expect(answer).to_have_attribute("data-status", status, timeout=STREAM_MS)
        before[run_id] = answer.evaluate(ENDING_FOOTPRINT)
    assert before[next(iter(runs))]["hooks"][0][0] == "length", "the live warning, to compare"

    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    for run_id, (name, status) in runs.items():
        reloaded = answer_of(riacho, run_id)
        expect(reloaded).to_have_attribute("data-status", status, timeout=STREAM_MS)
        assert reloaded.evaluate(ENDING_FOOTPRINT) == before[run_id], name


def test_the_attempt_on_screen_is_the_one_shown_after_a_reload(riacho: Page) -> None:
    first = send(riacho, "Say something")
    expect(first).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    with riacho.expect_request("**/api/respond/stream") as again:
        first.locator("[data-action=regenerate]").click()
    second = answer_of(riacho, json.loads(again.value.post_data or "{}")["runId"])
    expect(second).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    second.locator("[data-action=attempt-prev]").click()
    expect(riacho.locator("[data-role=assistant]")).to_have_attribute("data-attempt", "1")

    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    shown = riacho.locator("[data-role=assistant]")
    expect(shown).to_have_attribute("data-attempt", "1")
    expect(shown.locator(".switcher-label")).to_have_text("1 / 2")
