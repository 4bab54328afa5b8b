"""The chat list's own parts (issue 37): pinned chats first under "Pinned", each entry's menu
button, a search's snippet with the matched words marked, and the reducer keeping both."""

from __future__ import annotations

from datetime import UTC, datetime

from app.state.actions import ChatListing, ChatsListed, SearchChanged, SearchFound
from app.state.reducer import reduce
from app.state.state import ChatState, Search, State
from app.ui.chat_menu import marked, pinned_first
from app.ui.render import chat_list_html
from server.turns.snippets import snippet_of
from tests.unit.html_tree import parse_html

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
TODAY = NOW.timestamp() - 60


def _listed(*listings: ChatListing) -> State:
    return reduce(State(), ChatsListed(listings))


def test_pinned_chats_come_first_under_their_own_heading() -> None:
    state = _listed(
        ChatListing("c1", "Pinned one", TODAY, pinned=True),
        ChatListing("c2", "Newest", TODAY),
        ChatListing("c3", "Older", TODAY - 10),
    )
    assert pinned_first(state) == (["c1"], ["c2", "c3"])
    root = parse_html(chat_list_html(state, NOW))
    labels = [el.text for el in root.iter() if el.get("class") == "chat-group-label"]
    assert labels == ["Pinned", "Today"]
    ids = [el.get("data-chat-id") for el in root.iter() if el.has("data-chat-id")]
    assert ids == ["c1", "c2", "c3"]


def test_no_pinned_heading_without_a_pinned_chat() -> None:
    state = _listed(ChatListing("c1", "One", TODAY))
    root = parse_html(chat_list_html(state, NOW))
    assert "Pinned" not in [el.text for el in root.iter() if el.tag == "h2"]


def test_each_entry_has_a_menu_button_saying_whether_it_is_pinned() -> None:
    state = _listed(ChatListing("c1", "A <title>", TODAY, pinned=True), ChatListing("c2", "B"))
    root = parse_html(chat_list_html(state, NOW))
    buttons = [el for el in root.iter() if el.get("data-action") == "chat-menu"]
    assert [b.get("data-menu-for") for b in buttons] == ["c1", "c2"]
    assert [b.get("data-pinned") for b in buttons] == ["true", "false"]
    assert all(b.get("aria-haspopup") == "menu" for b in buttons)
    assert all(b.get("aria-expanded") == "false" for b in buttons)
    assert buttons[0].get("aria-label") == "Options for A <title>"


def test_a_listing_that_unpins_a_chat_unpins_it() -> None:
    state = _listed(ChatListing("c1", "One", TODAY, pinned=True))
    assert state.chats["c1"].pinned
    state = reduce(state, ChatsListed((ChatListing("c1", "One", TODAY),)))
    assert not state.chats["c1"].pinned


def test_a_search_result_shows_its_snippet_with_the_words_marked_and_escaped() -> None:
    state = reduce(State(), SearchChanged("floods"))
    found = ChatListing("c1", "Rivers", TODAY, snippet="the <b>Amazon</b> FLOODS in May")
    state = reduce(state, SearchFound("floods", (found, ChatListing("c2", "Floods"))))
    assert state.search == Search("floods", ("c1", "c2"), (("c1", found.snippet or ""),))
    root = parse_html(chat_list_html(state, NOW))
    snippets = [el for el in root.iter() if el.has("data-snippet")]
    assert [s.text for s in snippets] == ["the <b>Amazon</b> FLOODS in May"]
    assert [m.text for m in snippets[0].iter() if m.tag == "mark"] == ["FLOODS"]
    assert not [el for el in root.iter() if el.tag == "b"]
    titles = [el for el in root.iter() if el.get("class") == "chat-item-title"]
    assert [m.text for m in titles[1].iter() if m.tag == "mark"] == ["Floods"]


def test_marking_escapes_everything_and_takes_the_words_literally() -> None:
    assert marked("a < b.*c", ".*") == "a &lt; b<mark>.*</mark>c"
    assert marked("x&y", "") == "x&amp;y"
    assert marked("Rio rio RIO", "rio") == "<mark>Rio</mark> <mark>rio</mark> <mark>RIO</mark>"


def test_a_chat_state_is_not_pinned_by_default() -> None:
    assert not ChatState("c1").pinned


def test_the_servers_snippet_is_cut_at_words_around_the_first_match() -> None:
    words = " ".join(f"w{n}" for n in range(40))
    snippet = snippet_of(f"{words} NEEDLE\n\n{words}", "needle", side=20)
    assert snippet is not None
    assert snippet.startswith("…w") and snippet.endswith("…") and "NEEDLE w0" in snippet
    assert snippet_of("short text here", "text") == "short text here"
    assert snippet_of("nothing", "absent") is None
