"""The context ring's words stay true: past the window, near it, and after a compaction."""

from __future__ import annotations

from app.state.state import Compacted, ContextInfo
from app.ui.context_ring import compaction_note_html, context_html
from tests.unit.html_tree import parse_html


def test_a_count_past_the_window_is_worded_not_a_clamped_percentage() -> None:
    info = ContextInfo(1208, 900, 1.3422, "critical", True)

    root = parse_html(context_html(info))

    label = root.one("data-context-ring").get("aria-label") or ""
    assert "1,208 tokens" in label and "900-token window" in label
    assert "100%" not in label and "of 900" not in label
    assert root.one("data-context-ring").text == "Full"
    assert "no longer fits" in root.one("data-callout", "compaction").text


def test_the_callout_says_how_full_not_almost_full_at_three_quarters() -> None:
    root = parse_html(context_html(ContextInfo(683, 900, 0.7589, "warning", True)))

    words = root.one("data-callout", "compaction").text
    assert "almost full" not in words and "76%" in words


def test_near_the_window_is_almost_full_and_the_ring_never_reads_100_percent() -> None:
    root = parse_html(context_html(ContextInfo(899, 900, 0.9989, "critical", True)))

    assert "almost full" in root.one("data-callout", "compaction").text
    assert root.one("data-context-ring").text == "Full"


def test_a_compaction_says_what_it_did_until_the_next_measure() -> None:
    done = ContextInfo(113, 900, 0.1256, "ok", False, Compacted(1136, 5))

    note = parse_html(compaction_note_html(done)).one("data-note", "compacted")

    assert "5 earlier turns summarised" in note.text
    assert "113 of 900" in note.text and "1,136" in note.text
    assert compaction_note_html(ContextInfo(113, 900, 0.1256, "ok", False)) == ""
    assert compaction_note_html(None) == ""
