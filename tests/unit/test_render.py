"""HTML for the page: every DOM hook of SPEC §8, and every text value escaped.

Assertions read elements and attributes (``tests/unit/html_tree.py``), not substrings of markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from app.state.state import (
    ChatState,
    ConfirmingDelete,
    ContextInfo,
    EditingTitle,
    ErrorInfo,
    FallbackNotice,
    MessageState,
    Replaying,
    Resuming,
    RunState,
    Search,
    State,
)
from app.state.trace import Resume, RunTrace
from app.ui.chat_groups import period_label
from app.ui.error_words import SERVER_FAULT_WORDS
from app.ui.render import (
    ERROR_TEXT,
    INTERRUPTED_TEXT,
    TOOL_WORDS,
    ComposerFile,
    PromptView,
    actions_html,
    assistant_message_html,
    attr,
    banner_html,
    chat_head_html,
    chat_list_html,
    composer_files_html,
    context_html,
    details_html,
    human_error,
    image_html,
    part_html,
    parts_html,
    status_html,
    status_text,
    toast_html,
    tool_call_html,
    user_message_html,
)
from app.wire.api import AttachmentInfo
from app.wire.codes import ERROR_CODES
from app.wire.parts import (
    ContinuationPart,
    ImagePart,
    Part,
    SystemEventPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from app.wire.text import Text
from tests.unit.html_tree import Element, all_strings, parse_html

# --- builders -----------------------------------------------------------------------------------


def text_part(value: str) -> TextPart:
    return TextPart(content=Text(value))


def run(**fields: Any) -> RunState:
    base: dict[str, Any] = {"run_id": "r1", "chat_id": "c1", "trace": RunTrace("r1")}
    return RunState(**{**base, **fields})


def answer(run_ids: tuple[str, ...] = ("r1",), shown: int = 0, id: str = "m1") -> MessageState:
    return MessageState(id, "assistant", reply_to="u1", run_ids=run_ids, shown=shown)


def chat_with(*runs: RunState) -> ChatState:
    return ChatState("c1", runs={r.run_id: r for r in runs})


def article(r: RunState, message: MessageState | None = None, answer_html: str = "") -> Element:
    message = message or answer(run_ids=(r.run_id,))
    html = assistant_message_html(message, r, answer_html)
    return parse_html(html).one("data-role", "assistant", tag="article")


def actions(root: Element) -> dict[str, Element]:
    return {el.get("data-action") or "": el for el in root.find_all("data-action", tag="button")}


# --- the assistant message ----------------------------------------------------------------------


def test_assistant_message_carries_its_hooks() -> None:
    r = run(run_id="run_7", attempt=3, status="receiving", parts=(text_part("hi"),))
    message = answer(run_ids=("run_5", "run_6", "run_7"), shown=2, id="msg_9")

    element = article(r, message, "<p>hi</p>")

    assert element.get("data-message-id") == "msg_9"
    assert element.get("data-run-id") == "run_7"
    assert element.get("data-status") == "receiving"
    assert element.get("data-attempt") == "3"
    assert element.one(tag="div", name="class", value="message-text").one(tag="p").text == "hi"


@dataclass(frozen=True)
class Expect:
    """What the status line and the actions of one run state show."""

    text: str
    copy: bool = False
    resume: bool = False
    regenerate: bool = False
    warnings: frozenset[str] = frozenset()
    cancel: str | None = None
    error_code: str | None = None


PARTIAL = frozenset({"partial"})
STATUS_CASES = [
    pytest.param({"status": "connecting"}, Expect("Waiting for the answer…"), id="connecting"),
    pytest.param(
        {"status": "connecting", "phase": Resuming(2)}, Expect("Resuming…"), id="connecting-resume"
    ),
    pytest.param({"status": "receiving"}, Expect("Answering…"), id="receiving"),
    pytest.param(
        {"status": "completed", "stop_reason": "stop"},
        Expect("", copy=True, regenerate=True),
        id="completed-stop",
    ),
    pytest.param(
        {"status": "completed", "stop_reason": "length"},
        Expect("", copy=True, regenerate=True, warnings=frozenset({"length"})),
        id="completed-length-shows-length-warning",
    ),
    pytest.param(
        {"status": "completed", "stop_reason": "stop", "has_gap": True},
        Expect(
            "Completed with a gap: part of the answer may be missing",
            copy=True,
            regenerate=True,
            warnings=PARTIAL,
        ),
        id="completed-with-gap-is-partial",
    ),
    pytest.param(
        {"status": "cancelling", "cancel": "pending"},
        Expect("Stopping…", cancel="pending"),
        id="cancelling-pending-no-partial-yet",
    ),
    pytest.param(
        {"status": "cancelled", "cancel": "confirmed"},
        Expect("Stopped", regenerate=True, warnings=PARTIAL, cancel="confirmed"),
        id="cancelled-confirmed",
    ),
    pytest.param(
        {"status": "cancelled", "cancel": "unconfirmed"},
        Expect(
            "Stop requested — not confirmed by the server",
            regenerate=True,
            warnings=PARTIAL,
            cancel="unconfirmed",
        ),
        id="cancelled-unconfirmed-never-claims-stopped",
    ),
    pytest.param(
        {"status": "interrupted", "reason": "eof"},
        Expect(INTERRUPTED_TEXT["eof"], resume=True, regenerate=True, warnings=PARTIAL),
        id="interrupted-eof-offers-resume-and-regenerate",
    ),
    pytest.param(
        {"status": "interrupted", "reason": "gap"},
        Expect(INTERRUPTED_TEXT["gap"], resume=True, regenerate=True, warnings=PARTIAL),
        id="interrupted-gap",
    ),
    pytest.param(
        {"status": "interrupted"},
        Expect(INTERRUPTED_TEXT["eof"], resume=True, regenerate=True, warnings=PARTIAL),
        id="interrupted-without-reason-reads-as-eof",
    ),
    pytest.param(
        {"status": "interrupted", "reason": "expired"},
        Expect(INTERRUPTED_TEXT["expired"], regenerate=True, warnings=PARTIAL),
        id="interrupted-expired-offers-regenerate-only",
    ),
    pytest.param(
        {"status": "interrupted", "reason": "timeout"},
        Expect("Interrupted.", resume=True, regenerate=True, warnings=PARTIAL),
        id="interrupted-unknown-reason",
    ),
    pytest.param(
        {"status": "failed", "reason": "error", "error": ErrorInfo("idle_timeout", "x")},
        Expect("Failed", regenerate=True, warnings=PARTIAL, error_code="idle_timeout"),
        id="failed-shows-error-code",
    ),
    pytest.param(
        {"status": "failed", "reason": "protocol"},
        Expect("Failed", regenerate=True, warnings=PARTIAL),
        id="failed-without-error-info",
    ),
]


@pytest.mark.parametrize(("fields", "expect"), STATUS_CASES)
def test_status_line_and_actions_follow_the_run_state(
    fields: dict[str, Any], expect: Expect
) -> None:
    r = run(parts=(text_part("partial text"),), **fields)

    element = article(r)

    assert element.get("data-status") == r.status
    assert element.one(name="class", value="status-text").text == expect.text
    warnings = {el.get("data-warning") for el in element.find_all("data-warning")}
    assert warnings == expect.warnings
    cancels = [el.get("data-cancel") for el in element.find_all("data-cancel")]
    assert cancels == ([expect.cancel] if expect.cancel else [])
    codes = [el.get("data-error-code") for el in element.find_all("data-error-code")]
    assert codes == ([expect.error_code] if expect.error_code else [])
    buttons = actions(element)
    assert buttons["copy"].has("disabled") is not expect.copy
    assert ("resume" in buttons) is expect.resume
    assert ("regenerate" in buttons) is expect.regenerate
    for button in buttons.values():
        assert button.get("data-message-id") == "m1"


def test_failed_run_shows_the_human_error_text() -> None:
    r = run(status="failed", error=ErrorInfo("first_event_timeout", "server words"))

    warning = article(r).one("data-error-code", "first_event_timeout")

    assert ERROR_TEXT["first_event_timeout"] in warning.text
    assert "first_event_timeout" not in warning.text, "no code in front of the user"
    assert warning.find_all(tag="code") == []


# --- parts ---------------------------------------------------------------------------------------


def test_single_message_text_sits_where_text_first_appeared() -> None:
    parts: tuple[Part, ...] = (
        ThinkingPart(Text("plan")),
        text_part("Hello "),
        ToolCallPart("t1", "search"),
        text_part("world"),
        SystemEventPart("tool_loop_exhausted", "stopped looping"),
    )
    r = run(status="completed", parts=parts)

    root = parse_html(parts_html(r, "<p>Hello world</p>"))

    top = [child for child in root.children if isinstance(child, Element)]
    kinds = [
        el.get("data-part") or ("text" if "message-text" in el.classes() else "tool") for el in top
    ]
    assert kinds == ["thinking", "text", "tool", "system-event"]
    assert len(root.find_all("class", "message-text")) == 1
    assert root.one("class", "message-text").text == "Hello world"


def test_answer_without_text_still_has_an_empty_message_text() -> None:
    r = run(status="receiving", parts=(ToolCallPart("t1", "search"),))

    root = parse_html(parts_html(r, ""))

    text = root.one("class", "message-text")
    assert text.text == "" and text.children == []
    assert root.children[-1] is text


@pytest.mark.parametrize(
    ("status", "thinking_last", "opened"),
    [
        pytest.param("receiving", True, True, id="live-and-last-is-open"),
        pytest.param("receiving", False, False, id="live-but-followed-by-text-is-closed"),
        pytest.param("completed", True, False, id="settled-is-closed"),
    ],
)
def test_thinking_block_is_open_only_while_it_streams(
    status: str, thinking_last: bool, opened: bool
) -> None:
    thinking = ThinkingPart(Text("step 1"))
    parts: tuple[Part, ...] = (thinking,) if thinking_last else (thinking, text_part("a"))
    r = run(status=status, parts=parts)

    block = parse_html(parts_html(r, "")).one("data-part", "thinking", tag="details")

    assert block.has("open") is opened
    assert block.one(name="class", value="thinking-text").text == "step 1"


@pytest.mark.parametrize(
    ("part", "result_text", "result_classes"),
    [
        pytest.param(ToolCallPart("t1", "search"), None, None, id="streaming-no-result"),
        pytest.param(
            ToolCallPart("t1", "search", status="completed"), None, None, id="completed-no-result"
        ),
        pytest.param(
            ToolCallPart("t1", "search", status="done", result={"hits": 2}),
            '{\n  "hits": 2\n}',
            {"tool-result"},
            id="done-shows-result-json",
        ),
        pytest.param(
            ToolCallPart("t1", "search", status="error", result="boom", is_error=True),
            '"boom"',
            {"tool-result", "error"},
            id="error-result-is-marked",
        ),
        pytest.param(
            ToolCallPart("t1", "search", status="done", result={1, 2}),
            "{1, 2}",
            {"tool-result"},
            id="unserialisable-result-falls-back-to-str",
        ),
    ],
)
def test_tool_call_shows_name_arguments_status_and_result(
    part: ToolCallPart, result_text: str | None, result_classes: set[str] | None
) -> None:
    part = replace(part, arguments={"q": "cats"})

    call = parse_html(tool_call_html(part)).one("data-tool-call-id", "t1")

    assert call.get("data-tool-status") == part.status
    assert call.one("class", "tool-name").text == "search"
    assert call.one("class", "tool-status").text == TOOL_WORDS[part.status]
    assert call.one("class", "tool-args").text == '{\n  "q": "cats"\n}'
    results = [el for el in call.find_all(tag="pre") if "tool-result" in el.classes()]
    if result_text is None:
        assert results == []
    else:
        assert [el.text for el in results] == [result_text]
        assert results[0].classes() == result_classes


def test_tool_call_without_a_name_is_called_tool() -> None:
    call = parse_html(tool_call_html(ToolCallPart("t1"))).one("data-tool-call-id", "t1")

    assert call.one("class", "tool-name").text == "tool"


def _figure(part: ImagePart) -> Element:
    return parse_html(image_html(part)).one("data-image-id", part.image_id, tag="figure")


def test_pending_image_is_a_placeholder_with_its_prompt() -> None:
    figure = _figure(ImagePart("i1", prompt="a red fox"))

    assert figure.get("data-image-status") == "pending"
    assert figure.find_all(tag="img") == []
    assert "a red fox" in figure.one("class", "image-placeholder").text
    assert figure.one(tag="figcaption").text == "a red fox"


@pytest.mark.parametrize(
    ("url", "alt", "shown_alt"),
    [
        pytest.param("https://img.example/fox.png", "a fox", "a fox", id="https-with-alt"),
        pytest.param(
            "https://img.example/fox.png", None, "a red fox", id="alt-falls-back-to-prompt"
        ),
        pytest.param("data:image/webp;base64,UklGRg==", "x", "x", id="data-webp"),
    ],
)
def test_completed_image_shows_the_image(url: str, alt: str | None, shown_alt: str) -> None:
    figure = _figure(ImagePart("i1", "a red fox", status="completed", url=url, alt=alt))

    assert figure.get("data-image-status") == "completed"
    image = figure.one(tag="img")
    assert image.get("src") == url
    assert image.get("alt") == shown_alt
    assert figure.find_all("class", "image-placeholder") == []


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("data:image/svg+xml;base64,PHN2Zz4=", id="svg"),
        pytest.param("javascript:alert(1)", id="javascript"),
        pytest.param(None, id="missing-url"),
    ],
)
def test_completed_image_with_a_refused_url_shows_no_img(url: str | None) -> None:
    figure = _figure(ImagePart("i1", "fox", status="completed", url=url))

    assert figure.find_all(tag="img") == []
    assert "javascript" not in image_html(ImagePart("i1", "fox", status="completed", url=url))


def test_completed_image_with_a_refused_url_does_not_claim_to_be_generating() -> None:
    figure = _figure(ImagePart("i1", "fox", status="completed", url="data:image/svg+xml,<svg/>"))

    assert "Generating" not in figure.text


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        pytest.param("quota exceeded", "Image failed: quota exceeded", id="with-error"),
        pytest.param(None, "Image failed: unknown error", id="without-error"),
    ],
)
def test_failed_image_shows_the_failure(error: str | None, shown: str) -> None:
    figure = _figure(ImagePart("i1", "fox", status="failed", error=error))

    assert figure.get("data-image-status") == "failed"
    assert figure.one("class", "image-failed").text == shown
    assert figure.find_all(tag="img") == []


@pytest.mark.parametrize(
    ("recovered", "value", "word"),
    [
        pytest.param(
            False, "false", "Connection lost: picking the answer up again…", id="recovering"
        ),
        pytest.param(
            True,
            "true",
            "Connection restored: the answer picked up where it left off",
            id="recovered",
        ),
    ],
)
def test_continuation_marker(recovered: bool, value: str, word: str) -> None:
    marker = parse_html(part_html(ContinuationPart("replay", recovered))).one(
        "data-part", "continuation"
    )

    assert marker.get("data-recovered") == value
    assert marker.get("data-mode") == "replay"
    assert marker.text == word


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        pytest.param("Tool loop stopped", "Tool loop stopped", id="with-message"),
        pytest.param("", "tool_loop_exhausted", id="kind-when-no-message"),
    ],
)
def test_system_event_marker(message: str, shown: str) -> None:
    marker = parse_html(part_html(SystemEventPart("tool_loop_exhausted", message))).one(
        "data-part", "system-event"
    )

    assert marker.get("data-kind") == "tool_loop_exhausted"
    assert marker.text == shown


def test_message_parts_render_in_a_full_message() -> None:
    parts: tuple[Part, ...] = (
        ToolCallPart("t1", "draw", status="done", result="ok"),
        ImagePart("i1", "fox", tool_call_id="t1"),
        ContinuationPart("cursor", False),
        SystemEventPart("tool_loop_exhausted"),
    )
    element = article(run(status="receiving", parts=parts))

    assert element.one("data-tool-call-id", "t1").get("data-tool-status") == "done"
    assert element.one("data-image-id", "i1").get("data-image-status") == "pending"
    assert element.one("data-part", "continuation").get("data-recovered") == "false"
    assert element.one("data-part", "system-event").get("data-kind") == "tool_loop_exhausted"


# --- actions --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shown", "prev_disabled", "next_disabled", "label"),
    [
        pytest.param(0, True, False, "1 / 3", id="first"),
        pytest.param(1, False, False, "2 / 3", id="middle"),
        pytest.param(2, False, True, "3 / 3", id="last"),
    ],
)
def test_attempt_switcher(shown: int, prev_disabled: bool, next_disabled: bool, label: str) -> None:
    message = answer(run_ids=("r1", "r2", "r3"), shown=shown)

    root = parse_html(actions_html(message, run(status="completed")))

    buttons = actions(root)
    assert buttons["attempt-prev"].has("disabled") is prev_disabled
    assert buttons["attempt-next"].has("disabled") is next_disabled
    assert buttons["attempt-prev"].get("data-message-id") == "m1"
    assert root.one("class", "switcher-label").text == label


def test_single_attempt_has_no_switcher() -> None:
    buttons = actions(parse_html(actions_html(answer(), run(status="completed"))))

    assert set(buttons) == {"copy", "regenerate"}


def test_details_panel_says_the_trace_in_words_and_keeps_it_for_a_bug_report() -> None:
    trace = RunTrace("r1", request_start=0, first_content=40, terminal=900, outcome="completed")
    r = run(trace=trace, error=ErrorInfo("provider_error", "boom"))

    details = parse_html(details_html(r)).one("data-part", "answer-menu", tag="details")

    assert "The first words came after 40 ms." in details.text
    assert "It took 900 ms in all." in details.text
    assert details.one("data-run-trace", "r1", tag="pre").text == (
        "[r1] completed ttfc=40ms total=900ms error=provider_error"
    )


# --- user message, chat list, context, notices --------------------------------------------------


def test_user_message() -> None:
    element = parse_html(user_message_html(MessageState("u1", "user", text="hi\nthere"))).one(
        "data-role", "user", tag="article"
    )

    assert element.get("data-message-id") == "u1"
    assert element.one("class", "bubble").text == "hi\nthere"
    edit = element.one("data-action", "edit")
    assert (edit.get("data-message-id"), edit.get("aria-label")) == ("u1", "Edit message")
    assert element.find_all("data-action", "branch-prev") == []


@pytest.mark.parametrize(
    ("branch", "prev_disabled", "next_disabled", "label"),
    [
        pytest.param((0, 2), True, False, "1 / 2", id="first"),
        pytest.param((1, 3), False, False, "2 / 3", id="middle"),
        pytest.param((2, 3), False, True, "3 / 3", id="last"),
    ],
)
def test_a_prompt_with_branches_has_the_branch_switcher(
    branch: tuple[int, int], prev_disabled: bool, next_disabled: bool, label: str
) -> None:
    view = PromptView(MessageState("u1", "user", text="q"), branch)
    root = parse_html(user_message_html(view))
    prev, next_ = root.one("data-action", "branch-prev"), root.one("data-action", "branch-next")
    assert (prev.has("disabled"), next_.has("disabled")) == (
        prev_disabled,
        next_disabled,
    )
    assert prev.get("data-message-id") == next_.get("data-message-id") == "u1"
    assert root.one("class", "switcher-label").text == label


def test_a_prompt_being_edited_is_a_form_with_its_text() -> None:
    view = PromptView(MessageState("u1", "user", text="old words"), editing=True)
    root = parse_html(user_message_html(view))
    assert root.one("name", "edit-prompt", tag="textarea").text == "old words"
    assert root.one("data-action", "save-edit").get("data-message-id") == "u1"
    assert root.find_all("data-action", "edit") == [], "no Edit button while editing"


def test_edit_is_disabled_while_the_chat_answers() -> None:
    view = PromptView(MessageState("u1", "user", text="q"), can_edit=False)
    assert parse_html(user_message_html(view)).one("data-action", "edit").has("disabled")


def test_sent_attachments_are_named_with_sizes_and_images_previewed() -> None:
    files = (
        AttachmentInfo(attachment_id="a1", name="river.png", size=2048, mime_type="image/png"),
        AttachmentInfo(attachment_id="a2", name="notes.txt", size=12, mime_type="text/plain"),
    )
    message = MessageState("u1", "user", text="look", attachments=files)
    root = parse_html(user_message_html(PromptView(message), lambda a: f"/api/attachments/{a}"))
    names = [e.text for e in root.find_all("class", "chip-name")]
    sizes = [e.text for e in root.find_all("class", "chip-size")]
    assert (names, sizes) == (["river.png", "notes.txt"], ["2 KB", "12 bytes"])
    assert [i.get("src") for i in root.find_all(tag="img")] == ["/api/attachments/a1"]


@pytest.mark.parametrize(
    ("item", "state", "shown"),
    [
        pytest.param(
            ComposerFile("f1", "a.txt", 10, progress=0.5), "uploading", "50", id="uploading"
        ),
        pytest.param(ComposerFile("f1", "a.txt", 10), "ready", None, id="ready"),
        pytest.param(
            ComposerFile("f1", "big.bin", 9 * 1024**2, error="5 MB max"),
            "error",
            "5 MB max",
            id="refused",
        ),
    ],
)
def test_composer_file_chips(item: ComposerFile, state: str, shown: str | None) -> None:
    chip = parse_html(composer_files_html((item,))).one("data-file-state", state)
    remove = chip.one("data-action", "remove-attachment")
    assert remove.get("data-file-key") == "f1" and remove.get("aria-label") == f"Remove {item.name}"
    assert chip.one("class", "chip-name").text == item.name
    if state == "uploading":
        assert chip.one(tag="progress").get("value") == shown
    elif shown is not None:
        assert chip.one("class", "chip-error").text == shown


def test_a_composer_preview_must_be_a_local_object_url() -> None:
    remote = ComposerFile("f1", "x.png", 1, "image/png", preview_url="https://evil.test/x.png")
    local = ComposerFile("f2", "y.png", 1, "image/png", preview_url="blob:https://riacho/1")
    root = parse_html(composer_files_html((remote, local)))
    assert [i.get("src") for i in root.find_all(tag="img")] == ["blob:https://riacho/1"]


def test_chat_list_marks_the_active_chat_and_live_chats() -> None:
    generating = ChatState(
        "c2",
        "Second",
        runs={"r9": run(run_id="r9", chat_id="c2", status="receiving")},
        live_runs=("r9",),
    )
    state = State(
        chats={"c1": ChatState("c1", "First"), "c2": generating, "c3": ChatState("c3")},
        chat_order=("c2", "c1", "c3", "c4"),
        active_chat_id="c1",
    )

    buttons = parse_html(chat_list_html(state)).find_all("data-chat-id", tag="button")

    assert [b.get("data-chat-id") for b in buttons] == ["c2", "c1", "c3", "c4"]
    assert [b.get("aria-current") for b in buttons] == [None, "true", None, None]
    assert [b.one("class", "chat-item-title").text for b in buttons] == [
        "Second",
        "First",
        "New chat",
        "New chat",
    ]
    assert [len(b.find_all("aria-label", "answering")) for b in buttons] == [1, 0, 0, 0]


NOW = datetime(2026, 12, 1, 15, 0, tzinfo=timezone(timedelta(hours=-3)))


def _local(year: int, month: int, day: int) -> float:
    return datetime(year, month, day, tzinfo=NOW.tzinfo).timestamp()


def _at(day: int, hour: int = 12) -> float:
    return datetime(2026, 12, day, hour, tzinfo=NOW.tzinfo).timestamp()


@pytest.mark.parametrize(
    ("updated_at", "label"),
    [
        pytest.param(None, "Today", id="just-made"),
        pytest.param(_at(1, 0), "Today", id="midnight-local"),
        pytest.param(
            datetime(2026, 11, 30, 23, tzinfo=NOW.tzinfo).timestamp(), "Yesterday", id="yesterday"
        ),
        pytest.param(
            datetime(2026, 11, 27, tzinfo=NOW.tzinfo).timestamp(),
            "Previous 7 days",
            id="this-week",
        ),
        pytest.param(
            datetime(2026, 11, 10, tzinfo=NOW.tzinfo).timestamp(),
            "Previous 30 days",
            id="this-month",
        ),
        pytest.param(
            datetime(2026, 10, 31, tzinfo=NOW.tzinfo).timestamp(), "October", id="a-month-ago"
        ),
        pytest.param(datetime(2025, 3, 4, tzinfo=NOW.tzinfo).timestamp(), "March 2025", id="older"),
        pytest.param(
            datetime(2026, 12, 1, 2, 30, tzinfo=UTC).timestamp(),
            "Yesterday",
            id="utc-today-is-local-yesterday",
        ),
    ],
)
def test_day_labels_are_in_the_readers_time_zone(updated_at: float | None, label: str) -> None:
    assert period_label(updated_at, NOW) == label


def test_chats_are_grouped_by_day_newest_first() -> None:
    chats = {
        "a": ChatState("a", "A", updated_at=_at(1, 9)),
        "b": ChatState("b", "B", updated_at=_at(1, 8)),
        "c": ChatState("c", "C", updated_at=datetime(2026, 11, 30, tzinfo=NOW.tzinfo).timestamp()),
    }
    state = State(chats=chats, chat_order=("a", "b", "c"))
    root = parse_html(chat_list_html(state, NOW))
    groups = root.find_all("class", "chat-group", tag="section")
    assert [g.one(tag="h2").text for g in groups] == ["Today", "Yesterday"]
    assert [[b.get("data-chat-id") for b in g.find_all("data-chat-id")] for g in groups] == [
        ["a", "b"],
        ["c"],
    ]


@pytest.mark.parametrize(
    ("search", "shown"),
    [
        pytest.param(Search("river"), "Searching…", id="looking"),
        pytest.param(Search("river", ()), "No chat contains “river”.", id="none-found"),
    ],
)
def test_a_search_says_what_it_is_doing(search: Search, shown: str) -> None:
    state = State(chats={"c1": ChatState("c1", "A")}, chat_order=("c1",), search=search)
    root = parse_html(chat_list_html(state, NOW))
    assert root.one("class", "list-note").text == shown
    assert root.find_all("data-chat-id") == []


def test_a_search_lists_what_it_found() -> None:
    chats = {"c1": ChatState("c1", "Rivers"), "c2": ChatState("c2", "Music")}
    state = State(chats=chats, chat_order=("c1", "c2"), search=Search("riv", ("c1",)))
    root = parse_html(chat_list_html(state, NOW))
    assert [b.get("data-chat-id") for b in root.find_all("data-chat-id")] == ["c1"]


SAVED = State(chats={"c1": ChatState("c1", "Trip plans")}, chat_order=("c1",), active_chat_id="c1")


@pytest.mark.parametrize(
    ("state", "title"),
    [
        pytest.param(SAVED, "Trip plans", id="titled"),
        pytest.param(replace(SAVED, chats={"c1": ChatState("c1")}), "New chat", id="untitled"),
        pytest.param(State(), "New chat", id="new"),
    ],
)
def test_chat_title(state: State, title: str) -> None:
    assert parse_html(chat_head_html(state)).one(tag="h1").text == title


def test_a_saved_chat_has_rename_and_delete_with_visible_words() -> None:
    root = parse_html(chat_head_html(SAVED))
    assert root.one("data-action", "rename-chat").text == "Rename"
    assert root.one("data-action", "delete-chat").text == "Delete"


def test_a_chat_not_on_the_server_yet_cannot_be_renamed_or_deleted() -> None:
    state = State(chats={"new": ChatState("new")}, active_chat_id="new")
    root = parse_html(chat_head_html(state))
    assert root.find_all("data-action", "rename-chat") == []
    assert root.find_all("data-action", "delete-chat") == []


def test_renaming_shows_the_title_in_a_field() -> None:
    root = parse_html(chat_head_html(replace(SAVED, editing=EditingTitle())))
    assert root.one("name", "chat-title", tag="input").get("value") == "Trip plans"
    # NOTE: the page keeps its one heading (axe page-has-heading-one), hidden from sight
    assert [h.get("class") for h in root.find_all(tag="h1")] == ["chat-title visually-hidden"]
    assert root.find_all("data-refusal", "chat-title") == []


def test_an_empty_title_is_refused_in_words_beside_the_field() -> None:
    root = parse_html(chat_head_html(replace(SAVED, editing=EditingTitle(refused=True))))
    field = root.one("name", "chat-title", tag="input")
    refusal = root.one("data-refusal", "chat-title")
    assert field.get("aria-invalid") == "true"
    assert field.get("aria-describedby") == refusal.get("id")
    assert "Trip plans" in refusal.text and "title" in refusal.text


def test_confirming_a_delete_keeps_the_heading() -> None:
    root = parse_html(chat_head_html(replace(SAVED, editing=ConfirmingDelete())))
    assert len(root.find_all(tag="h1")) == 1


def test_deleting_asks_first() -> None:
    root = parse_html(chat_head_html(replace(SAVED, editing=ConfirmingDelete())))
    assert "Trip plans" in root.one("class", "confirm").text
    assert root.one("data-action", "confirm-delete").text == "Delete"
    assert root.one("data-action", "cancel-delete").text == "Keep"


def test_chat_list_without_an_active_chat_marks_none() -> None:
    state = State(chats={"c1": ChatState("c1", "A")}, chat_order=("c1",))

    assert parse_html(chat_list_html(state)).one("data-chat-id", "c1").get("aria-current") is None


@pytest.mark.parametrize(
    ("ratio", "shown"),
    [
        pytest.param(0.4567, "0.4567", id="in-range"),
        pytest.param(1.7, "1.0000", id="clamped-above"),
        pytest.param(-0.2, "0.0000", id="clamped-below"),
    ],
)
def test_context_ring_ratio_is_a_decimal_between_0_and_1(ratio: float, shown: str) -> None:
    info = ContextInfo(4567, 10000, ratio, "warning", False)

    ring = parse_html(context_html(info)).one("data-context-ring")

    assert ring.get("data-ratio") == shown
    assert 0.0 <= float(ring.get("data-ratio") or "nan") <= 1.0
    assert ring.get("data-severity") == "warning"
    assert "4,567 of 10,000 tokens" in (ring.get("aria-label") or "")


@pytest.mark.parametrize(
    ("recommended", "callouts"),
    [pytest.param(True, 1, id="recommended"), pytest.param(False, 0, id="not-recommended")],
)
def test_compaction_callout_only_when_recommended(recommended: bool, callouts: int) -> None:
    info = ContextInfo(95, 100, 0.95, "critical", recommended)

    root = parse_html(context_html(info))

    assert root.one("data-context-ring").get("data-severity") == "critical"
    found = root.find_all("data-callout", "compaction")
    assert len(found) == callouts
    if callouts:
        assert actions(found[0])["compact"].tag == "button"


def test_nothing_to_show_renders_nothing() -> None:
    assert context_html(None) == ""
    assert toast_html(State()) == ""
    assert banner_html(State()) == ""


def test_fallback_toast() -> None:
    notice = FallbackNotice("cursor_expired", "Replayed the conversation", "c1", "r1", 3)

    shown = State(fallback_notice=notice, active_chat_id="c1")
    toast = parse_html(toast_html(shown)).one("data-toast", "fallback")

    assert toast.get("data-reason") == "cursor_expired"
    assert "Replayed the conversation" in toast.text
    assert "dismiss-toast" in actions(toast)
    assert toast_html(State(fallback_notice=notice, active_chat_id="c2")) == "", "not its chat"


@pytest.mark.parametrize(
    ("error", "text"),
    [
        pytest.param(
            ErrorInfo("model_unavailable", "srv", 503),
            ERROR_TEXT["model_unavailable"],
            id="known-code-uses-own-words",
        ),
        pytest.param(
            ErrorInfo("rate_limited", "Slow down", 429, retry_after=2.5),
            "Slow down Try again in 2.5 s.",
            id="unknown-code-uses-server-message-and-retry-after",
        ),
        pytest.param(ErrorInfo("weird", ""), "Something went wrong.", id="no-message"),
        pytest.param(
            ErrorInfo("internal", "boom internal", 500),
            SERVER_FAULT_WORDS,
            id="a-5xx-in-words-never-the-servers-text",
        ),
        pytest.param(
            ErrorInfo("http_error", "boom internal", 502),
            SERVER_FAULT_WORDS,
            id="a-bare-5xx-in-words-never-the-servers-text",
        ),
    ],
)
def test_error_banner(error: ErrorInfo, text: str) -> None:
    banner = parse_html(banner_html(State(last_error=error))).one("data-error-code", error.code)

    assert human_error(error) == text
    assert banner.get("role") == "alert"
    assert banner.one(tag="span").text == text, "words only: the code is on data-error-code"
    assert "dismiss-error" in actions(banner)


# --- every text value is escaped ------------------------------------------------------------------

HOSTILE = "<b>\"'&x"


def esc(make_html: Callable[[], str], id: str, shown: str = HOSTILE) -> Any:
    return pytest.param(make_html, shown, id=id)


ESCAPE_CASES = [
    esc(lambda: tool_call_html(ToolCallPart("t1", HOSTILE)), "tool-name"),
    esc(lambda: tool_call_html(ToolCallPart(HOSTILE)), "tool-call-id"),
    esc(
        lambda: tool_call_html(ToolCallPart("t1", "x", arguments={"q": HOSTILE})),
        "tool-arguments",
        json.dumps(HOSTILE),
    ),
    esc(
        lambda: tool_call_html(ToolCallPart("t1", "x", status="done", result=HOSTILE)),
        "tool-result",
        json.dumps(HOSTILE),
    ),
    esc(
        lambda: tool_call_html(ToolCallPart("t1", "x", status="done", result={HOSTILE})),
        "tool-result-unserialisable",
        str({HOSTILE}),
    ),
    esc(lambda: image_html(ImagePart("i1", prompt=HOSTILE)), "image-prompt"),
    esc(lambda: image_html(ImagePart(HOSTILE)), "image-id"),
    esc(
        lambda: image_html(
            ImagePart("i1", "p", status="completed", url="https://a.example/i.png", alt=HOSTILE)
        ),
        "image-alt",
    ),
    esc(
        lambda: image_html(
            ImagePart("i1", "p", status="completed", url=f"https://a.example/{HOSTILE}")
        ),
        "image-url",
    ),
    esc(lambda: image_html(ImagePart("i1", "p", status="failed", error=HOSTILE)), "image-error"),
    esc(lambda: part_html(ThinkingPart(Text(HOSTILE))), "thinking-text"),
    esc(lambda: part_html(ContinuationPart(HOSTILE, True)), "continuation-mode"),
    esc(lambda: part_html(SystemEventPart(HOSTILE)), "system-event-kind"),
    esc(lambda: part_html(SystemEventPart("k", HOSTILE)), "system-event-message"),
    esc(lambda: banner_html(State(last_error=ErrorInfo(HOSTILE, HOSTILE))), "banner-error"),
    esc(lambda: status_html(run(status="failed", error=ErrorInfo(HOSTILE, HOSTILE))), "run-error"),
    esc(
        lambda: chat_list_html(State(chats={"c1": ChatState("c1", HOSTILE)}, chat_order=("c1",))),
        "chat-title",
    ),
    esc(lambda: chat_list_html(State(chat_order=(HOSTILE,), active_chat_id=HOSTILE)), "chat-id"),
    esc(
        lambda: chat_head_html(
            State(chats={"c1": ChatState("c1", HOSTILE)}, chat_order=("c1",), active_chat_id="c1")
        ),
        "chat-title-top-bar",
    ),
    esc(
        lambda: chat_head_html(
            State(
                chats={"c1": ChatState("c1", HOSTILE)},
                chat_order=("c1",),
                active_chat_id="c1",
                editing=EditingTitle(),
            )
        ),
        "chat-title-field",
    ),
    esc(
        lambda: chat_list_html(State(search=Search(HOSTILE, ()))),
        "search-words",
    ),
    esc(
        lambda: composer_files_html((ComposerFile(HOSTILE, HOSTILE, 1, error=HOSTILE),)),
        "composer-file",
    ),
    esc(
        lambda: user_message_html(
            MessageState(
                "u1",
                "user",
                attachments=(
                    AttachmentInfo(attachment_id="a", name=HOSTILE, size=1, mime_type="text/plain"),
                ),
            )
        ),
        "sent-attachment-name",
    ),
    esc(
        lambda: user_message_html(
            PromptView(MessageState("u1", "user", text=HOSTILE), editing=True)
        ),
        "prompt-being-edited",
    ),
    esc(
        lambda: toast_html(
            State(fallback_notice=FallbackNotice(HOSTILE, HOSTILE, "c", "r", 1), active_chat_id="c")
        ),
        "toast-reason-and-message",
    ),
    esc(lambda: user_message_html(MessageState("u1", "user", text=HOSTILE)), "user-prompt"),
    esc(lambda: user_message_html(MessageState(HOSTILE, "user")), "user-message-id"),
    esc(
        lambda: assistant_message_html(
            answer(run_ids=(HOSTILE,), id=HOSTILE),
            run(run_id=HOSTILE, trace=RunTrace(HOSTILE)),
            "",
        ),
        "assistant-message-run-ids-and-trace",
    ),
    esc(
        lambda: actions_html(answer(run_ids=("a", "b"), id=HOSTILE), run(status="interrupted")),
        "action-message-id",
    ),
    esc(lambda: attr("title", HOSTILE), "attr-helper"),
]


@pytest.mark.parametrize(("make_html", "shown"), ESCAPE_CASES)
def test_every_text_value_is_escaped(make_html: Callable[[], str], shown: str) -> None:
    """The value arrives intact as text or attribute (``shown``: as JSON for tool data)."""
    html = make_html()
    root = parse_html(f"<div {html.lstrip()}>" if html.startswith(" ") else html)

    assert HOSTILE not in html
    assert "<b>" not in html
    assert root.find_all(tag="b") == []
    assert any(shown in value for value in all_strings(root)), html


def test_a_run_filling_a_gap_says_so() -> None:
    run = RunState("r1", "c1", status="connecting", phase=Replaying())
    assert run.filling_gap
    assert status_text(run) == "Filling in a missing part of the answer…"


def test_the_page_has_words_for_every_code_of_the_contract() -> None:
    assert set(ERROR_TEXT) == ERROR_CODES


@pytest.mark.parametrize(
    ("error", "text"),
    [
        pytest.param(
            ErrorInfo("provider_error", "model not loaded"),
            "The model reported an error. model not loaded.",
            id="provider-words-kept",
        ),
        pytest.param(
            ErrorInfo("provider_refused", "Gemini stopped the answer (SAFETY)"),
            "The model declined to answer this. Gemini stopped the answer (SAFETY).",
            id="refusal-says-why",
        ),
        pytest.param(
            ErrorInfo("server_shutdown", "The server stopped."),
            ERROR_TEXT["server_shutdown"],
            id="own-words-only",
        ),
    ],
)
def test_codes_with_specifics_show_the_servers_words_after_their_own(
    error: ErrorInfo, text: str
) -> None:
    assert human_error(error) == text


# --- waiting: the seconds waited, the countdown before Retry --------------------------------------


def test_a_banner_that_says_when_to_try_again_counts_down_before_retry() -> None:
    error = ErrorInfo("model_unavailable", "resting", 503, retry_after=2.5, retry_at=4_200.0)
    banner = parse_html(banner_html(State(last_error=error))).one("data-error-code", error.code)

    countdown = banner.one("data-until", "4200")
    assert countdown.text == "Try again in 3 s."
    assert banner.one("data-action", "retry").has("disabled")
    words = banner.find_all(tag="span")[0]
    assert words.text == ERROR_TEXT["model_unavailable"], "said once"


@pytest.mark.parametrize(
    ("error", "retry"),
    [
        pytest.param(ErrorInfo("network_error", "down"), True, id="network"),
        pytest.param(ErrorInfo("model_unavailable", "x", 503), True, id="unavailable-no-wait"),
        pytest.param(ErrorInfo("chat_not_found", "x", 404), False, id="not-for-a-retry"),
        pytest.param(ErrorInfo("internal", "boom", 500), True, id="a-server-fault"),
        pytest.param(ErrorInfo("empty_prompt", "x", 400), False, id="the-prompt-is-the-problem"),
    ],
)
def test_a_banner_offers_retry_at_once_for_errors_that_may_pass(
    error: ErrorInfo, retry: bool
) -> None:
    banner = parse_html(banner_html(State(last_error=error))).one("data-error-code", error.code)

    buttons = banner.find_all("data-action", "retry")
    assert len(buttons) == int(retry)
    assert not any(b.has("disabled") for b in buttons)
    assert not banner.find_all("data-until")


@pytest.mark.parametrize(
    ("fields", "since"),
    [
        pytest.param({"status": "connecting"}, "1500", id="waiting-since-the-request"),
        pytest.param(
            {"status": "connecting", "phase": Resuming(3)}, "9000", id="resuming-since-the-resume"
        ),
        pytest.param({"status": "receiving"}, None, id="not-while-receiving"),
        pytest.param({"status": "completed"}, None, id="not-once-settled"),
    ],
)
def test_an_answer_waited_for_says_since_when_for_the_page_to_count(
    fields: dict[str, Any], since: str | None
) -> None:
    trace = RunTrace("r1", request_start=1_500.0, resumes=(Resume(9_000.0, 3, False),))
    if "phase" not in fields:
        trace = RunTrace("r1", request_start=1_500.0)
    line = parse_html(status_html(run(trace=trace, **fields)))

    counted = line.find_all("data-since")
    assert [c.get("data-since") for c in counted] == ([since] if since else [])
    assert all(c.text == "" for c in counted), "the page fills the seconds in"
