"""Who wrote an answer, and when: ``riacho-demo · 14:32`` under it, the full date on hover.

Both facts come from the server only (the answer's stored ``created_at`` and ``model_id``: the
chat read, or the terminal event of a live answer, which carries the same values), and the time
is shown to the minute: a live answer and its reload render the same bytes. An answer the
server has not stamped yet (still streaming) shows nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

from app.state.state import RunState
from app.ui.markup import attr, escape

_zone: list[tzinfo] = [UTC]


def use_zone(zone: tzinfo) -> None:
    """Show times in ``zone`` (the page sets the browser's at boot: Pyodide knows only UTC)."""
    _zone[0] = zone


def answer_time(stamp: str) -> datetime | None:
    """The server's ISO 8601 time, in the device's time zone (``None`` if unreadable)."""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(_zone[0]).replace(second=0, microsecond=0)


def answer_meta_html(run: RunState) -> str:
    """The quiet line of the answer's model and time (empty until the server said them)."""
    moment = None if run.answered_at is None else answer_time(run.answered_at)
    pieces: list[str] = []
    if run.model_id:
        pieces.append(f'<span class="answer-model">{escape(run.model_id)}</span>')
    if moment is not None:
        full = moment.strftime("%A, %d %B %Y, %H:%M")
        pieces.append(
            f"<time{attr('datetime', moment.isoformat())}{attr('title', full)}>"
            f"{moment.strftime('%H:%M')}</time>"
        )
    if not pieces:
        return ""
    return f'<span class="answer-meta" data-answer-meta>{" · ".join(pieces)}</span>'
