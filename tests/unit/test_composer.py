"""The composer's files and options in the store (``State.composer``): the reducer's actions,
what is sent, the limits checked before an upload, the options kept across reloads, and the
view that shows them. The page only uploads and reads the prompt (``app/browser/page.py``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest

from app.run.chat_stream import ChatStream, SendOptions
from app.state.actions import FileAdded, FileChanged, FileRemoved, OptionsChanged
from app.state.reducer import compose, reduce
from app.state.state import (
    ComposerFile,
    ComposerOptions,
    ComposerState,
    State,
    options_from_kept,
    options_to_keep,
    refusal,
)
from app.ui.controller import Controller
from app.ui.view import View
from app.wire.api import AttachmentInfo, UploadLimits
from tests.unit.test_view import FakeDom, parse_html, slots_written

INFO = AttachmentInfo(attachment_id="att_1", name="a.png", size=3, mime_type="image/png")
UPLOADING = ComposerFile("f1", "a.png", 3, "image/png", progress=0.0, preview_url="blob:a")
LIMITS = UploadLimits(
    attachment_max_bytes=1000, attachments_per_message=2, attachment_types=["image/png"]
)


def with_files(*files: ComposerFile) -> ComposerState:
    return ComposerState(files=files)


# --- the reducer ----------------------------------------------------------------------------


def test_a_file_goes_from_uploading_to_attached() -> None:
    composer = compose(ComposerState(), FileAdded(UPLOADING))
    composer = compose(composer, FileChanged("f1", progress=0.5))
    assert (composer.uploading, composer.files[0].progress) == (True, 0.5)
    composer = compose(composer, FileChanged("f1", attachment=INFO))
    assert (composer.uploading, composer.attached, composer.refused) == (False, (INFO,), ())
    assert composer.files[0].preview_url == "blob:a", "its preview stays"


def test_a_failed_upload_is_refused_with_why_and_never_sent() -> None:
    composer = compose(with_files(UPLOADING), FileChanged("f1", error="HTTP 413"))
    assert [item.error for item in composer.refused] == ["HTTP 413"]
    assert (composer.uploading, composer.attached) == (False, ())


def test_files_keep_their_order_and_one_is_removed_alone() -> None:
    second = replace(UPLOADING, key="f2", name="b.png")
    composer = compose(with_files(UPLOADING, second), FileChanged("f2", attachment=INFO))
    composer = compose(composer, FileRemoved("f1"))
    assert [item.key for item in composer.files] == ["f2"]
    assert composer.attached == (INFO,)


@pytest.mark.parametrize(
    "action",
    [
        pytest.param(FileChanged("gone", progress=0.3), id="change-of-a-removed-file"),
        pytest.param(FileRemoved("gone"), id="remove-twice"),
        pytest.param(OptionsChanged(ComposerOptions()), id="same-options"),
    ],
)
def test_an_action_that_changes_nothing_keeps_the_state_object(action: Any) -> None:
    state = State(composer=with_files(UPLOADING))
    assert reduce(state, action) is state


def test_options_change_in_the_store() -> None:
    options = ComposerOptions(thinking=True, effort="high", tools=True)
    assert reduce(State(), OptionsChanged(options)).composer.options == options


# --- what is sent -----------------------------------------------------------------------------


def test_send_options_are_the_stores_options_files_and_the_model_picked() -> None:
    composer = ComposerState(
        files=(
            replace(UPLOADING, progress=None, attachment=INFO),
            ComposerFile("f2", "x.exe", 9, error="not accepted"),
        ),
        options=ComposerOptions(thinking=True, effort="low", tools=True),
    )
    stream = cast(ChatStream, type("S", (), {"get_state": lambda self: State(composer=composer)})())
    options = Controller(stream, lambda _text: None).send_options("m1")
    assert options == SendOptions(
        thinking_enabled=True,
        reasoning_effort="low",
        tool_intent=True,
        model_id="m1",
        attachments=(INFO,),
    )


# --- the server's limits, before an upload ------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "files", "why"),
    [
        pytest.param(ComposerFile("f", "a.png", 10, "image/png"), (), None, id="fits"),
        pytest.param(
            ComposerFile("f", "a.png", 1001, "image/png"), (), "1000 bytes max", id="too-big"
        ),
        pytest.param(
            ComposerFile("f", "a.exe", 10, "application/x-msdownload"),
            (),
            "this kind of file is not accepted",
            id="type",
        ),
        pytest.param(
            ComposerFile("f", "c.png", 10, "image/png"),
            (UPLOADING, replace(UPLOADING, key="f2")),
            "at most 2 files per message",
            id="too-many",
        ),
        pytest.param(
            ComposerFile("f", "c.png", 10, "image/png"),
            (UPLOADING, replace(UPLOADING, key="f2", error="HTTP 500")),
            None,
            id="a-refused-file-does-not-count",
        ),
    ],
)
def test_refusal(item: ComposerFile, files: tuple[ComposerFile, ...], why: str | None) -> None:
    assert refusal(item, files, LIMITS) == why


# --- options kept across reloads ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kept", "options"),
    [
        pytest.param(
            {"thinking": True, "tools": True, "effort": "high"},
            ComposerOptions(True, "high", True),
            id="all",
        ),
        pytest.param({"thinking": "yes", "effort": "max"}, ComposerOptions(), id="bad-values"),
        pytest.param({"tools": True}, ComposerOptions(tools=True), id="partial"),
        pytest.param(["thinking"], None, id="not-an-object"),
        pytest.param(None, None, id="nothing-kept"),
    ],
)
def test_options_from_kept(kept: object, options: ComposerOptions | None) -> None:
    assert options_from_kept(kept) == options


def test_kept_options_read_back_as_they_were() -> None:
    options = ComposerOptions(thinking=True, effort="low", tools=False)
    assert options_from_kept(options_to_keep(options)) == options


# --- the view -----------------------------------------------------------------------------------


def test_the_view_shows_the_composers_files_from_the_store() -> None:
    dom = FakeDom()
    view = View(dom)
    view.render(State(composer=with_files(replace(UPLOADING, progress=0.25))))
    chips = parse_html(slots_written(dom.take())["#attachment-list"])
    assert chips.one("data-file-key", "f1")
    view.render(State())
    assert slots_written(dom.take())["#attachment-list"] == ""


def test_the_view_shows_options_once_per_change() -> None:
    dom = FakeDom()
    view = View(dom)
    state = State()
    view.render(state)
    assert ("set_options", ComposerOptions()) in dom.take()
    changed = reduce(state, OptionsChanged(ComposerOptions(thinking=True)))
    view.render(changed)
    view.render(changed)
    assert [call for call in dom.take() if call[0] == "set_options"] == [
        ("set_options", ComposerOptions(thinking=True))
    ]
