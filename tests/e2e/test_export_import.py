"""A chat as a file, in real Chromium (SPEC §14): Export downloads the branch on screen as
Markdown and the whole chat as JSON; Import opens that JSON as a new chat that reads the same,
both branches reachable; a file that is not a chat export is refused in words; the same from a
static deploy whose API is on another origin."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import FilePayload, Locator, Page, expect

from tests.e2e import test_static_deploy
from tests.e2e.conftest import BOOT_TIMEOUT_MS, LiveServer, PageGuard
from tests.e2e.scenarios import STREAM_ROUTE, answer_of, done, on_next_stream, send, text

STREAM_MS = 20_000
IMPORTED = "**/api/chats/import"


def _answered(page: Page, server: LiveServer, prompt: str, words: str) -> Locator:
    on_next_stream(page, server, lambda _: [text(words), done()])
    answer = send(page, prompt)
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    return answer


def _edited(page: Page, server: LiveServer, prompt: str, edit: str, words: str) -> Locator:
    on_next_stream(page, server, lambda _: [text(words), done()])
    page.locator("[data-role=user]").filter(has_text=prompt).locator("[data-action=edit]").click()
    editor = page.locator("textarea[name=edit-prompt]")
    editor.fill(edit)
    with page.expect_request("**/api/respond/stream") as sent:
        editor.press("Enter")
    answer = answer_of(page, json.loads(sent.value.post_data or "{}")["runId"])
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    return answer


def _export(page: Page, kind: str, folder: Path) -> Path:
    """Press Export, then the format; the downloaded file, saved under its own name."""
    page.locator(".export-menu > summary").click()
    with page.expect_download() as downloaded:
        page.locator(f"[data-action=export-chat][data-format={kind}]").click()
    saved = folder / downloaded.value.suggested_filename
    downloaded.value.save_as(saved)
    return saved


def test_a_chat_exported_as_json_imports_as_the_same_chat_with_both_branches(
    riacho: Page, server: LiveServer, tmp_path: Path
) -> None:
    _answered(riacho, server, "Name a river", "The Douro.")
    _answered(riacho, server, "Where does it flow?", "Through Porto.")
    _edited(riacho, server, "Where does it flow?", "How long is it?", "About 897 km.")
    users = riacho.locator("[data-role=user] .bubble")
    expect(users).to_have_text(["Name a river", "How long is it?"])
    original = riacho.locator("#chat-list [aria-current=true]").get_attribute("data-chat-id")

    markdown = _export(riacho, "markdown", tmp_path).read_text(encoding="utf-8")
    assert "How long is it?" in markdown and "About 897 km." in markdown
    assert "Where does it flow?" not in markdown, "only the branch on screen"
    assert "## You\n\nName a river" in markdown and "The Douro." in markdown

    exported = _export(riacho, "json", tmp_path)
    assert exported.suffix == ".json"
    data = json.loads(exported.read_text(encoding="utf-8"))
    assert data["exportVersion"] == 1 and len(data["messages"]) == 6

    with riacho.expect_response(IMPORTED) as answered:
        riacho.locator("input[type=file][name=import]").set_input_files(exported)
    assert answered.value.status == 201
    new_id = answered.value.json()["id"]
    assert new_id != original
    expect(riacho.locator(f'#chat-list [data-chat-id="{new_id}"]')).to_have_attribute(
        "aria-current", "true", timeout=STREAM_MS
    )
    answers = riacho.locator("[data-role=assistant]")
    expect(users).to_have_text(["Name a river", "How long is it?"], timeout=STREAM_MS)
    expect(answers.locator(".message-text")).to_have_text(["The Douro.", "About 897 km."])
    expect(answers.first).to_have_attribute("data-status", "completed")
    edited = riacho.locator("[data-role=user]").filter(has_text="How long is it?")
    expect(edited.locator(".switcher-label")).to_have_text("2 / 2")
    edited.locator("[data-action=branch-prev]").click()
    expect(users).to_have_text(["Name a river", "Where does it flow?"])
    expect(answers.locator(".message-text")).to_have_text(["The Douro.", "Through Porto."])
    expect(riacho.locator("[data-import-error]")).to_be_hidden()


def test_a_file_that_is_not_a_chat_export_is_refused_in_words(
    riacho: Page, server: LiveServer, guard: PageGuard
) -> None:
    guard.allow_console_error(r"status of 400")  # NOTE: the browser's own line for the 400
    answer = _answered(riacho, server, "Keep this chat", "Kept.")
    chat_id = riacho.locator("#chat-list [aria-current=true]").get_attribute("data-chat-id")
    listed = riacho.locator("#chat-list [data-chat-id]").count()
    refused: FilePayload = {
        "name": "old.json",
        "mimeType": "application/json",
        "buffer": b'{"exportVersion": 9}',
    }
    with riacho.expect_response(IMPORTED) as answered:
        riacho.locator("input[type=file][name=import]").set_input_files(files=[refused])
    assert answered.value.status == 400
    said = riacho.locator("[data-import-error]")
    expect(said).to_be_visible()
    expect(said).to_contain_text("“old.json” was not imported: exportVersion is 9")
    expect(said).to_contain_text("Nothing was changed.")
    expect(riacho.locator(f'#chat-list [data-chat-id="{chat_id}"]')).to_have_attribute(
        "aria-current", "true"
    )
    expect(answer.locator(".message-text")).to_have_text("Kept.")
    expect(riacho.locator("#chat-list [data-chat-id]")).to_have_count(listed)


# --- a static deploy on another origin -----------------------------------------------------------

deploy = test_static_deploy.deploy  # NOTE: that module's bundle and API, reused here


def test_a_static_deploy_exports_and_imports_with_its_credentials(
    page: Page, guard: PageGuard, deploy: test_static_deploy.StaticDeploy, tmp_path: Path
) -> None:
    """The page on a plain static host, the API on another origin: the downloads and the
    import carry the session cookie there (and the file keeps its server-made name)."""
    guard.allow_console_error(r"status of 401")  # NOTE: the first GET /api/session, signed out
    page.goto(deploy.page_url)
    expect(page.locator("form[name=sign-in]")).to_be_visible(timeout=BOOT_TIMEOUT_MS)
    test_static_deploy._sign_in(page)
    with page.expect_request(STREAM_ROUTE) as sent:
        page.locator("textarea[name=prompt]").fill("Hello from a static host")
        page.locator("[data-action=send]").click()
    answer = answer_of(page, json.loads(sent.value.post_data or "{}")["runId"])
    expect(answer).to_have_attribute("data-status", "completed", timeout=60_000)

    markdown = _export(page, "markdown", tmp_path)
    assert markdown.name == "Hello-from-a-static-host.md"
    assert "## You\n\nHello from a static host" in markdown.read_text(encoding="utf-8")
    exported = _export(page, "json", tmp_path)
    with page.expect_response("**/api/chats/import") as answered:
        page.locator("input[type=file][name=import]").set_input_files(exported)
    assert answered.value.status == 201
    new_id = answered.value.json()["id"]
    expect(page.locator(f'#chat-list [data-chat-id="{new_id}"]')).to_have_attribute(
        "aria-current", "true", timeout=STREAM_MS
    )
    imported = page.locator("[data-role=assistant]")
    expect(imported).to_have_count(1)
    expect(imported).to_have_attribute("data-status", "completed")
    expect(imported.locator(".message-text")).to_contain_text("You asked: Hello from a static host")
