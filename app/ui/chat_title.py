"""The chat title while it is renamed or its delete is confirmed: the rename field (and its
refusal of an empty title, in words beside it), and the page's one heading, kept for readers of
the page (visually hidden) while the field or the question stands in its place."""

from __future__ import annotations

from app.ui.markup import attr, escape

TITLE_REFUSAL_ID = "chat-title-refusal"


def title_refusal_words(title: str) -> str:
    """Why an empty title was not saved, and what keeps the old one."""
    return f"A chat needs a title: type one, or press Esc to keep “{title}”."


def hidden_title_html(title: str) -> str:
    """The chat's ``h1``, read by assistive technology, not shown."""
    return f'<h1 class="chat-title visually-hidden">{escape(title)}</h1>'


def rename_form_html(title: str, *, refused: bool) -> str:
    """The title as a field with Save and Cancel; when an empty title was refused, the field is
    empty, marked invalid and described by the refusal (the old title stays the chat's)."""
    refusal = ""
    field = attr("value", title)
    if refused:
        field = (
            attr("value", "")
            + attr("aria-invalid", "true")
            + attr("aria-describedby", TITLE_REFUSAL_ID)
        )
        refusal = (
            f'<p class="field-refusal"{attr("id", TITLE_REFUSAL_ID)}'
            f' data-refusal="chat-title" role="alert">{escape(title_refusal_words(title))}</p>'
        )
    return (
        '<form class="rename-form" name="rename-chat">'
        f'<input name="chat-title" maxlength="200" aria-label="Chat title"{field}>'
        '<button type="submit" data-action="save-title">Save</button>'
        f'<button type="button" data-action="cancel-title">Cancel</button>{refusal}</form>'
    )
