"""The chat list's own parts (issue 37): pinned chats first under "Pinned", each entry's menu
button (Rename, Pin/Unpin, Delete: the menu itself is one element of the page, opened by
app/browser/chat_menu.py), and a search result's snippet with the matched words marked.
"""

from __future__ import annotations

import re

from app.state.state import State
from app.ui.markup import attr, escape

PINNED_LABEL = "Pinned"


def pinned_first(state: State) -> tuple[list[str], list[str]]:
    """The listed chats split in two, in the server's order: the pinned, then the others."""
    pinned: list[str] = []
    others: list[str] = []
    for chat_id in state.chat_order:
        chat = state.chats.get(chat_id)
        (pinned if chat is not None and chat.pinned else others).append(chat_id)
    return pinned, others


def menu_button_html(chat_id: str, title: str, *, pinned: bool) -> str:
    """The ``⋯`` button of one entry (``aria-haspopup``: it opens the page's chat menu)."""
    return (
        '<button type="button" class="icon-button chat-menu-button" data-action="chat-menu"'
        f"{attr('data-menu-for', chat_id)}{attr('data-pinned', 'true' if pinned else 'false')}"
        f' aria-haspopup="menu" aria-expanded="false" aria-controls="chat-menu"'
        f"{attr('aria-label', f'Options for {title}')}{attr('title', 'Options')}>"
        '<svg class="icon" aria-hidden="true" viewBox="0 0 24 24">'
        '<circle cx="6" cy="12" r="1.4"/><circle cx="12" cy="12" r="1.4"/>'
        '<circle cx="18" cy="12" r="1.4"/></svg></button>'
    )


def marked(text: str, query: str) -> str:
    """``text`` escaped, each case-blind occurrence of ``query`` in ``<mark>``."""
    words = " ".join(query.split())
    if not words:
        return escape(text)
    pieces = re.split(f"({re.escape(words)})", text, flags=re.IGNORECASE)
    return "".join(
        f"<mark>{escape(piece)}</mark>" if index % 2 else escape(piece)
        for index, piece in enumerate(pieces)
    )


def snippet_html(state: State, chat_id: str) -> str:
    """Under a search result: why it matched (empty when its title did, or no search)."""
    search = state.search
    if search is None:
        return ""
    snippet = dict(search.snippets).get(chat_id)
    if not snippet:
        return ""
    return f'<span class="chat-item-snippet" data-snippet>{marked(snippet, search.query)}</span>'


def title_html(state: State, title: str) -> str:
    """An entry's title, the search's words marked in it while searching."""
    return marked(title, state.search.query) if state.search is not None else escape(title)
