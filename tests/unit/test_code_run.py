"""The pure state of a code block's run (app/state/code_run.py)."""

from __future__ import annotations

import pytest

from app.state.code_run import (
    Chunk,
    CodeEvent,
    CodeRunState,
    Finished,
    Killed,
    OutFile,
    Printed,
    Started,
    Stopped,
    Wrote,
    data_files,
    merge,
    reduce,
    start,
    words,
)
from app.wire.api import AttachmentInfo


def fold(state: CodeRunState, *events: CodeEvent) -> list[CodeRunState]:
    seen = [state]
    for event in events:
        seen.append(reduce(seen[-1], event))
    return seen


def test_a_run_goes_starting_running_done_with_output_in_order() -> None:
    states = fold(
        start(1, fresh=True),
        Started(1),
        Printed(1, (Chunk("stdout", "a\n"), Chunk("stderr", "warn\n"), Chunk("stdout", "b\n"))),
        Printed(1, (Chunk("stdout", "c\n"),)),
        Finished(1),
    )
    assert [s.status for s in states] == ["starting", "running", "running", "running", "done"]
    assert states[-1].output == (
        Chunk("stdout", "a\n"),
        Chunk("stderr", "warn\n"),
        Chunk("stdout", "b\nc\n"),
    )
    assert states[-1].chars == 11


def test_a_raise_ends_error_with_the_traceback() -> None:
    text = 'Traceback (most recent call last):\n  File "<code>", line 1\nZeroDivisionError\n'
    state = fold(start(1, fresh=False), Started(1), Finished(1, text))[-1]
    assert (state.status, state.traceback) == ("error", text)
    assert words(state) == "Error"


@pytest.mark.parametrize(
    ("kept", "said"),
    [
        pytest.param(True, "Stopped (KeyboardInterrupt); variables are kept", id="interrupted"),
        pytest.param(False, "Stopped; Python was restarted, so variables were reset", id="reset"),
    ],
)
def test_stop_says_whether_the_state_was_kept(kept: bool, said: str) -> None:
    state = fold(start(1, fresh=False), Started(1), Stopped(1, kept))[-1]
    assert (state.status, state.state_kept, words(state)) == ("stopped", kept, said)


def test_time_limit_ends_killed_and_names_the_bound() -> None:
    state = fold(start(1, fresh=False, time_limit_ms=1500), Started(1), Killed(1, "time"))[-1]
    assert (state.status, state.limit, state.state_kept) == ("killed", "time", False)
    assert "time limit of 1.5 s" in words(state)


def test_output_past_the_cap_is_dropped_and_ends_killed() -> None:
    state = fold(
        start(1, fresh=False, max_chars=5),
        Started(1),
        Printed(1, (Chunk("stdout", "abc"), Chunk("stderr", "defg"), Chunk("stdout", "h"))),
    )[-1]
    assert state.output == (Chunk("stdout", "abc"), Chunk("stderr", "de"))
    assert (state.status, state.limit, state.chars) == ("killed", "output", 5)
    assert "output limit of 5 characters" in words(state)


def test_output_exactly_at_the_cap_keeps_running() -> None:
    state = fold(
        start(1, fresh=False, max_chars=3), Started(1), Printed(1, (Chunk("stdout", "abc"),))
    )
    assert state[-1].status == "running"


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(Printed(2, (Chunk("stdout", "x"),)), id="another-runs-output"),
        pytest.param(Finished(2), id="another-runs-end"),
        pytest.param(Printed(1, ()), id="empty-batch"),
        pytest.param(Printed(1, (Chunk("stdout", ""),)), id="empty-text"),
        pytest.param(Wrote(1, ()), id="no-files"),
    ],
)
def test_events_that_change_nothing_return_the_same_state(event: CodeEvent) -> None:
    state = reduce(start(1, fresh=False), Started(1))
    assert reduce(state, event) is state


@pytest.mark.parametrize(
    "late",
    [
        pytest.param(Printed(1, (Chunk("stdout", "late"),)), id="output"),
        pytest.param(Finished(1), id="finished"),
        pytest.param(Killed(1, "time"), id="killed"),
    ],
)
def test_nothing_applies_after_a_stop(late: CodeEvent) -> None:
    stopped = fold(start(1, fresh=False), Started(1), Stopped(1, False))[-1]
    assert reduce(stopped, late) is stopped


def test_files_written_are_listed_in_order() -> None:
    png, csv = OutFile("plot.png", "image/png", 10), OutFile("t.csv", "text/csv", 3)
    state = fold(start(1, fresh=False), Started(1), Wrote(1, (png,)), Wrote(1, (csv,)))[-1]
    assert state.files == (png, csv)


@pytest.mark.parametrize(
    ("fresh", "said"),
    [
        pytest.param(True, "Starting Python…", id="first"),
        pytest.param(False, "Running…", id="again"),
    ],
)
def test_starting_words_say_when_python_starts(fresh: bool, said: str) -> None:
    assert words(start(1, fresh=fresh)) == said


def test_merge_joins_neighbours_of_one_stream_only() -> None:
    merged = merge((Chunk("stdout", "a"),), [Chunk("stdout", "b"), Chunk("stderr", "c")])
    assert merged == (Chunk("stdout", "ab"), Chunk("stderr", "c"))


def _attachment(attachment_id: str, name: str) -> AttachmentInfo:
    return AttachmentInfo(attachment_id=attachment_id, name=name, size=1, mime_type="text/csv")


@pytest.mark.parametrize(
    ("given", "files"),
    [
        pytest.param([("a", "data.csv")], (("a", "data.csv"),), id="one"),
        pytest.param(
            [("a", "data.csv"), ("b", "data.csv"), ("c", "data.csv")],
            (("a", "data.csv"), ("b", "data (2).csv"), ("c", "data (3).csv")),
            id="same-name-numbered",
        ),
        pytest.param([("a", "x.csv"), ("a", "x.csv")], (("a", "x.csv"),), id="same-file-once"),
        pytest.param([("a", "../../etc/passwd")], (("a", "passwd"),), id="no-folders"),
        pytest.param([("a", "C:\\Users\\me\\notes.txt")], (("a", "notes.txt"),), id="windows-path"),
        pytest.param([("a", ".."), ("b", "")], (("a", "file"), ("b", "file (2)")), id="no-name"),
    ],
)
def test_data_files_are_plain_unique_names(
    given: list[tuple[str, str]], files: tuple[tuple[str, str], ...]
) -> None:
    assert data_files(_attachment(i, name) for i, name in given) == files
