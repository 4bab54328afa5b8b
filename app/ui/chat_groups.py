"""The chat list's headings: Today, Yesterday, Previous 7 days, Previous 30 days, then one per
month ("November", "March 2025"), as users of chat products expect — never one per day.

Pure: the reader's "now" (with its time zone) is given, so a chat is placed by the reader's
calendar, not the server's.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo


def period_label(updated_at: float | None, now: datetime) -> str:
    """The heading a chat last active at ``updated_at`` (epoch s; ``None``: just now) goes
    under, seen at ``now``."""
    tz: tzinfo | None = now.tzinfo
    day = now.date() if updated_at is None else datetime.fromtimestamp(updated_at, tz).date()
    today = now.date()
    if day >= today:
        return "Today"
    if day == today - timedelta(days=1):
        return "Yesterday"
    if day > today - timedelta(days=7):
        return "Previous 7 days"
    if day > today - timedelta(days=30):
        return "Previous 30 days"
    return month_words(day, today)


def month_words(day: date, today: date) -> str:
    """``November`` in the current year, ``March 2025`` before it."""
    return f"{day:%B}" if day.year == today.year else f"{day:%B} {day.year}"
