"""A chat as a file, in the page (SPEC §14): the chat header's Export menu (Markdown of the
branch on screen, JSON of the whole chat) and the words for an import the server refused."""

from __future__ import annotations

from app.ui.markup import attr, escape
from app.wire.chat_file import ExportFormat

EXPORT_LABELS: dict[ExportFormat, str] = {
    "markdown": "Markdown (this branch)",
    "json": "JSON (the whole chat, to import)",
}
IMPORT_ERROR_SELECTOR = "[data-import-error]"


def export_menu_html() -> str:
    """The Export menu: one ``[data-action=export-chat]`` per format."""
    items = "".join(
        f'<button type="button" data-action="export-chat"{attr("data-format", kind)}>'
        f"{escape(label)}</button>"
        for kind, label in EXPORT_LABELS.items()
    )
    return (
        '<details class="export-menu"><summary title="Download this chat">Export</summary>'
        f'<div class="export-items" role="group" aria-label="Export as">{items}</div></details>'
    )


def export_file_name(disposition: str | None, title: str, kind: ExportFormat) -> str:
    """The download's name: the server's (``Content-Disposition``), else one made here."""
    if disposition and 'filename="' in disposition:
        name = disposition.split('filename="', 1)[1].split('"', 1)[0]
        if name and "/" not in name and "\\" not in name:
            return name
    stem = "-".join("".join(c if c.isalnum() else " " for c in title).split())[:80] or "Chat"
    return f"{stem}.{'md' if kind == 'markdown' else 'json'}"


def import_refused_words(file_name: str, reason: str) -> str:
    """Why a file was not imported, in words (nothing in the page changed)."""
    return f"“{file_name}” was not imported: {reason.rstrip('.')}. Nothing was changed."


def import_failed_words(file_name: str, words: str) -> str:
    """An import that failed for another reason (the network, the server)."""
    return f"“{file_name}” could not be imported. {words}"
