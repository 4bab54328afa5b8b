"""The chat list's headings (app/ui/chat_groups.py): periods, never one heading per day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.state.state import ChatState, State
from app.ui.chat_groups import period_label
from app.ui.render import chat_list_html
from tests.unit.html_tree import parse_html

NOW = datetime(2026, 12, 5, 10, tzinfo=UTC)


def test_86_chats_over_three_months_get_a_handful_of_headings_newest_first() -> None:
    stamps = [(NOW - timedelta(hours=26 * n)).timestamp() for n in range(86)]
    chats = {f"c{n}": ChatState(f"c{n}", f"Chat {n}", updated_at=t) for n, t in enumerate(stamps)}
    state = State(chats=chats, chat_order=tuple(chats))

    groups = parse_html(chat_list_html(state, NOW)).find_all("class", "chat-group", tag="section")

    assert [g.one(tag="h2").text for g in groups] == [
        "Today",
        "Yesterday",
        "Previous 7 days",
        "Previous 30 days",
        "November",
        "October",
        "September",
    ]
    assert sum(len(g.find_all("data-chat-id")) for g in groups) == 86


def test_the_year_is_said_for_an_earlier_year() -> None:
    assert period_label(datetime(2025, 12, 24, tzinfo=UTC).timestamp(), NOW) == "December 2025"
