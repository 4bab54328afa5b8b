"""Edit and branch: the message tree on the page (state, store commands, history)."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from app.state.history import ChatView, chat_from_detail, view_of, with_view
from app.state.state import TOP, ChatState, MessageState
from app.wire.api import AttachmentInfo, MessageOut
from tests.unit.fakes import (
    FakeTransport,
    Script,
    detail,
    done,
    finish,
    make_stream,
    open_chat,
    text,
)


def _user(message_id: str, after: str | None, text: str = "") -> MessageState:
    return MessageState(message_id, "user", text=text or message_id, after_run=after)


def _answer(message_id: str, prompt: str, *runs: str, shown: int = -1) -> MessageState:
    return MessageState(
        message_id, "assistant", reply_to=prompt, run_ids=runs, shown=shown % len(runs)
    )


def _ids(chat: ChatState) -> list[str]:
    return [m.id for m in chat.visible()]


# --- the visible branch (pure) ------------------------------------------------------------------

TREE = (
    _user("u1", None),
    _answer("a1", "u1", "r1", "r1b"),  # two attempts; the conversation went on after each
    _user("u2", "r1"),
    _answer("a2", "u2", "r2"),
    _user("u2b", "r1b"),
    _answer("a2b", "u2b", "r2b"),
    _user("u2c", "r1b"),  # an edit of u2b: a sibling after the same answer
    _answer("a2c", "u2c", "r2c"),
)


def test_the_branch_shown_follows_the_attempt_shown_and_the_newest_prompt() -> None:
    chat = ChatState("c", messages=TREE)
    assert _ids(chat) == ["u1", "a1", "u2c", "a2c"]
    first_attempt = ChatState(
        "c", messages=(TREE[0], _answer("a1", "u1", "r1", "r1b", shown=0), *TREE[2:])
    )
    assert _ids(first_attempt) == ["u1", "a1", "u2", "a2"]


def test_a_chosen_branch_is_shown_and_positions_count_siblings() -> None:
    chat = ChatState("c", messages=TREE, branches={"r1b": "u2b"})
    assert _ids(chat) == ["u1", "a1", "u2b", "a2b"]
    assert chat.branch_of(TREE[4]) == (0, 2) and chat.branch_of(TREE[6]) == (1, 2)
    assert chat.branch_of(TREE[0]) == (0, 1)
    assert chat.sibling(TREE[4], 1) is TREE[6] and chat.sibling(TREE[4], 2) is None


def test_a_chosen_prompt_that_is_gone_falls_back_to_the_newest() -> None:
    chat = ChatState("c", messages=TREE, branches={"r1b": "u_deleted"})
    assert _ids(chat) == ["u1", "a1", "u2c", "a2c"]


def test_a_prompt_without_its_answer_yet_ends_the_branch() -> None:
    chat = ChatState("c", messages=(_user("u1", None),))
    assert _ids(chat) == ["u1"]


# --- the store ---------------------------------------------------------------------------------


async def test_a_send_follows_the_last_answer_on_screen_and_an_edit_branches() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    for run in ("run_1", "run_2", "run_3"):
        fake.runs.append(Script([text(1, f"answer {run}", run), done(2, run)]))
    await finish(chat.send("first"))
    await finish(chat.send("second"))
    second = chat.get_state().messages[2]
    await finish(chat.edit(second.id, "second, better"))

    first_body, second_body, edit_body = fake.opened
    assert (first_body.at_top, first_body.after_run_id) == (True, None)
    assert (second_body.at_top, second_body.after_run_id) == (False, "run_1")
    assert (edit_body.prompt, edit_body.after_run_id) == ("second, better", "run_1")
    state = chat.get_state()
    assert [m.text for m in state.messages if m.role == "user"] == ["first", "second, better"]
    edited = state.messages[2]
    assert state.active_chat is not None and state.active_chat.branch_of(edited) == (1, 2)

    chat.show_branch(edited.id, 0)
    assert [m.text for m in chat.get_state().messages if m.role == "user"] == ["first", "second"]
    assert chat.get_state().runs["run_2"].text == "answer run_2"


async def test_editing_the_first_prompt_starts_at_the_top() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.extend(Script([text(1, "a", r), done(2, r)]) for r in ("run_1", "run_2"))
    await finish(chat.send("hello"))
    await finish(chat.edit(chat.get_state().messages[0].id, "hello again"))
    assert (fake.opened[1].at_top, fake.opened[1].after_run_id) == (True, None)
    assert [m.text for m in chat.get_state().messages] == ["hello again", ""]


async def test_an_edit_goes_with_the_options_given_now_and_keeps_the_attachments() -> None:
    from app.run.chat_stream import SendOptions

    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.extend(Script([text(1, "a", r), done(2, r)]) for r in ("run_1", "run_2"))
    note = AttachmentInfo(attachment_id="att_9", name="n.txt", size=3, mime_type="text/plain")
    await finish(chat.send("read this", SendOptions(attachments=(note,))))
    now = SendOptions(tool_intent=True, model_id="riacho-mini")
    await finish(chat.edit(chat.get_state().messages[0].id, "read this, slowly", now))
    body = fake.opened[1]
    assert (body.tool_intent, body.model_id, body.attachment_ids) == (
        True,
        "riacho-mini",
        ["att_9"],
    )
    assert chat.get_state().messages[0].attachments == (note,)


async def test_an_edit_is_refused_while_answering_and_for_an_answer() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(Script([text(1, "a"), done(2)]))
    await finish(chat.send("q"))
    answer = chat.get_state().messages[1]
    assert chat.edit(answer.id, "no") is None
    assert chat.edit(chat.get_state().messages[0].id, "  ") is None, "an empty edit"


async def test_a_prompt_after_an_answer_the_server_never_had_follows_the_one_before() -> None:
    from app.wire.errors import TransportError

    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(Script([text(1, "a"), done(2)]))
    fake.runs.append(Script(error=TransportError("offline")))  # never reached the server
    fake.runs.append(Script([text(1, "b", "run_2"), done(2, "run_2")]))
    await finish(chat.send("one"))
    await finish(chat.send("two"))  # NOTE: it waits, and goes when the server is back
    fake.chats["c1"] = detail(  # NOTE: the server's history, fetched again when it is back
        "c1",
        [
            MessageOut(id="u1", role="user", text="one"),
            MessageOut(
                id="a1",
                role="assistant",
                text="a",
                status="completed",
                run_id="run_1",
                parent_id="u1",
            ),
        ],
    )
    chat.server_reached(True)
    await chat.wait_idle()
    assert (fake.opened[2].run_id, fake.opened[2].after_run_id) == ("run_2", "run_1")


# --- the history --------------------------------------------------------------------------------


def test_history_shows_the_conversation_of_the_newest_message() -> None:
    chat = chat_from_detail(
        detail(
            "c",
            [
                MessageOut(id="u1", role="user", text="q1"),
                MessageOut(id="a1", role="assistant", run_id="r1", parent_id="u1"),
                MessageOut(id="a1b", role="assistant", run_id="r1b", parent_id="u1", attempt=2),
                MessageOut(id="u2", role="user", text="after first", parent_id="a1"),
                MessageOut(id="a2", role="assistant", run_id="r2", parent_id="u2"),
            ],
        )
    )
    assert [m.after_run for m in chat.messages if m.role == "user"] == [None, "r1"]
    assert _ids(chat) == ["u1", "a1", "u2", "a2"], "the newest prompt went on after attempt 1"
    assert chat.shown_run(chat.visible()[1]).run_id == "r1"  # type: ignore[union-attr]


def test_several_first_prompts_are_branches_at_the_top_not_one_line() -> None:
    # NOTE: the first prompt edited: both user messages start the chat (parentId null)
    chat = chat_from_detail(
        detail(
            "c",
            [
                MessageOut(id="u1", role="user", text="Name a river in Brazil"),
                MessageOut(id="a1", role="assistant", run_id="r1", parent_id="u1"),
                MessageOut(id="u1b", role="user", text="Name a river in Portugal"),
                MessageOut(id="a1b", role="assistant", run_id="r1b", parent_id="u1b"),
            ],
        )
    )
    assert _ids(chat) == ["u1b", "a1b"]
    assert chat.branch_of(chat.visible()[0]) == (1, 2)
    first = replace(chat, branches={TOP: "u1"})
    assert _ids(first) == ["u1", "a1"]


# --- any tree: the fold against a simple reference walk -----------------------------------------


@st.composite
def stored_trees(draw: st.DrawFn) -> list[MessageOut]:
    """A chat's stored messages in creation order: each new one is a prompt at the top or after
    any answer so far, or an attempt at any prompt so far (the server's shapes, and more)."""
    messages: list[MessageOut] = [MessageOut(id="m0", role="user", text="first")]
    for number in range(1, draw(st.integers(1, 24))):
        prompts = [m for m in messages if m.role == "user"]
        answers = [m for m in messages if m.role == "assistant"]
        if draw(st.booleans()):
            parent = draw(st.sampled_from(prompts))
            attempt = 1 + sum(1 for m in answers if m.parent_id == parent.id)
            run = f"run_{number}"
            new = MessageOut(
                id=f"m{number}", role="assistant", run_id=run, parent_id=parent.id, attempt=attempt
            )
        else:
            parent_id = draw(st.sampled_from([None, *(m.id for m in answers)]))
            new = MessageOut(id=f"m{number}", role="user", text=f"p{number}", parent_id=parent_id)
        messages.append(new)
    return messages


def _reference_walk(stored: list[MessageOut]) -> list[str]:
    """The stored ids on screen: the path to the newest message, else the newest prompt and the
    latest attempt at each fork."""
    by_id = {m.id: m for m in stored}
    path: set[str] = set()
    node: MessageOut | None = stored[-1]
    while node is not None:
        path.add(node.id)
        node = by_id.get(node.parent_id or "")
    shown: list[str] = []
    parent: str | None = None
    while True:
        prompts = [m for m in stored if m.role == "user" and m.parent_id == parent]
        if not prompts:
            return shown
        prompt = next((m for m in prompts if m.id in path), prompts[-1])
        shown.append(prompt.id)
        attempts = [m for m in stored if m.role == "assistant" and m.parent_id == prompt.id]
        if not attempts:
            return shown
        answer = next((m for m in attempts if m.id in path), attempts[-1])
        shown.append(answer.id)
        parent = answer.id


def _stored_ids_on_screen(chat: ChatState) -> list[str]:
    ids = []
    for message in chat.visible():
        run = chat.shown_run(message)
        ids.append(message.id if run is None else str(run.message_id))
    return ids


@given(stored_trees())
def test_any_tree_shows_what_the_reference_walk_shows(stored: list[MessageOut]) -> None:
    chat = chat_from_detail(detail("c", stored))
    assert _stored_ids_on_screen(chat) == _reference_walk(stored)


@given(stored_trees())
def test_every_fork_of_any_tree_counts_its_branches_and_attempts(stored: list[MessageOut]) -> None:
    chat = chat_from_detail(detail("c", stored))
    for message in chat.visible():
        if message.role == "user":
            siblings = [
                m.id
                for m in stored
                if m.role == "user" and m.parent_id == _parent_of(stored, message)
            ]
            assert chat.branch_of(message) == (siblings.index(message.id), len(siblings))
        else:
            attempts = [
                m for m in stored if m.role == "assistant" and m.parent_id == message.reply_to
            ]
            assert len(message.run_ids) == len(attempts)
    assert len(chat.runs) == sum(1 for m in stored if m.role == "assistant")


def _parent_of(stored: list[MessageOut], message: MessageState) -> str | None:
    return next(m.parent_id for m in stored if m.id == message.id)


def test_history_keeps_a_prompts_attachments() -> None:
    note = AttachmentInfo(attachment_id="att_1", name="n.txt", size=3, mime_type="text/plain")
    chat = chat_from_detail(
        detail("c", [MessageOut(id="u1", role="user", text="q", attachments=[note])])
    )
    assert chat.messages[0].attachments == (note,)


# --- the view kept on the device ------------------------------------------------------------------

FORKED = [
    MessageOut(id="u1", role="user", text="Brazil"),
    MessageOut(id="a1", role="assistant", run_id="r1", parent_id="u1"),
    MessageOut(id="a1b", role="assistant", run_id="r1b", parent_id="u1", attempt=2),
    MessageOut(id="u2", role="user", text="Portugal"),
    MessageOut(id="a2", role="assistant", run_id="r2", parent_id="u2"),
]


def test_a_kept_view_shows_the_branch_and_attempt_that_were_on_screen() -> None:
    read = chat_from_detail(detail("c", FORKED))
    assert _ids(read) == ["u2", "a2"], "newest, as read"
    chosen = replace(read, branches={TOP: "u1"})
    chosen = replace(
        chosen,
        messages=tuple(replace(m, shown=0) if m.id == "a1" else m for m in chosen.messages),
    )
    view = view_of(chosen)
    assert ChatView.from_json(json.loads(json.dumps(view.to_json()))) == view
    again = with_view(chat_from_detail(detail("c", FORKED)), view)
    assert _ids(again) == ["u1", "a1"]
    assert again.shown_run(again.visible()[1]).run_id == "r1"  # type: ignore[union-attr]


def test_a_kept_view_of_things_gone_changes_nothing() -> None:
    read = chat_from_detail(detail("c", FORKED))
    gone = ChatView({TOP: "u_deleted", "r_gone": "u1"}, ("r_gone",))
    assert with_view(read, gone).visible() == read.visible()
    assert ChatView.from_json({"branches": "nonsense"}) is None
