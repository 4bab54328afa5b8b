"""A generated image's card: the placeholder while its answer runs, then the image, the
failure, or — when the answer ended before the image came — that it was never finished.

The part itself stays ``pending`` (that is what the stream said); what the user sees of a
pending image depends on whether its answer is still live, so a stopped answer never says
"Generating image…" again (after a reload too: the chat read gives the same settled run).
"""

from __future__ import annotations

from typing import Literal

from app.ui.markdown import is_safe_image
from app.ui.markup import attr, escape
from app.wire.parts import ImagePart

ShownImageStatus = Literal["pending", "completed", "failed", "unfinished"]
"""``data-image-status``: the part's own status, or ``unfinished`` (pending, answer ended)."""


def shown_status(part: ImagePart, *, run_live: bool) -> ShownImageStatus:
    """What the card says of ``part``: a pending image of an answer that ended is unfinished."""
    if part.status == "pending" and not run_live:
        return "unfinished"
    return part.status


def image_html(part: ImagePart, *, run_live: bool = True) -> str:
    """A generated image: placeholder, image, failure, or unfinished."""
    status = shown_status(part, run_live=run_live)
    head = (
        f'<figure class="image"{attr("data-image-id", part.image_id)}'
        f"{attr('data-image-status', status)}>"
    )
    return f"{head}{_body(part, status)}<figcaption>{escape(part.prompt)}</figcaption></figure>"


def _body(part: ImagePart, status: ShownImageStatus) -> str:
    if status == "completed" and part.url and is_safe_image(part.url):
        alt = part.alt or part.prompt
        return f'<img{attr("src", part.url)}{attr("alt", alt)} loading="lazy">'
    if status == "failed":
        why = escape(part.error or "unknown error")
        return f'<div class="image-failed">Image failed: {why}</div>'
    if status == "completed":
        return '<div class="image-failed">Image not shown: its address is missing or refused</div>'
    if status == "unfinished":
        return (
            '<div class="image-failed">Image not finished: the answer ended before it was '
            "ready. Regenerate to try again.</div>"
        )
    return f'<div class="image-placeholder">Generating image… {escape(part.prompt)}</div>'
