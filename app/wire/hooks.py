"""The page's ``[data-action]`` names (SPEC §8): one vocabulary for the view that renders the
buttons, the page that handles their clicks, the controller and the tests that press them.

A name outside it is a button nothing handles; ``tests/unit/test_hooks.py`` checks that every
``data-action`` written in the page, its view and the end-to-end tests is one of these, and that
the page's table handles each one.
"""

from __future__ import annotations

from typing import Final, Literal, TypeGuard, get_args

PageAction = Literal[
    "approve-tool",
    "attempt-next",
    "attempt-prev",
    "branch-next",
    "branch-prev",
    "cancel-delete",
    "cancel-edit",
    "cancel-title",
    "chat-delete",
    "chat-menu",
    "chat-pin",
    "chat-rename",
    "close-dialog",
    "close-drawer",
    "close-shortcuts",
    "compact",
    "composer-options",
    "confirm-chat-delete",
    "confirm-delete",
    "copy",
    "copy-code",
    "copy-partial",
    "delete-chat",
    "deny-tool",
    "dismiss-error",
    "dismiss-toast",
    "edit",
    "edit-queued",
    "export-chat",
    "import-chat",
    "jump-to-latest",
    "new-chat",
    "open-drawer",
    "regenerate",
    "remove-attachment",
    "remove-queued",
    "rename-chat",
    "resume",
    "retry",
    "run-code",
    "save-edit",
    "save-title",
    "send",
    "settings",
    "shortcuts",
    "sign-out",
    "sign-out-everywhere",
    "skip-to-composer",
    "stop",
    "stop-code",
    "suggest",
    "thinking",
    "tools",
    "update-app",
]
"""Every ``data-action`` of the page."""

PAGE_ACTIONS: Final[frozenset[str]] = frozenset(get_args(PageAction))


def is_page_action(name: str) -> TypeGuard[PageAction]:
    """``name`` (an attribute read from the DOM) is a page action."""
    return name in PAGE_ACTIONS
