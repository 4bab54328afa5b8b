"""The output panel of a run (app/ui/code_output.py) and the Run button (app/ui/code.py)."""

from __future__ import annotations

import pytest

from app.state.code_run import (
    Chunk,
    Finished,
    Killed,
    OutFile,
    Printed,
    Started,
    Wrote,
    reduce,
    start,
)
from app.ui.code import code_block_html
from app.ui.code_output import output_attributes, output_html


def test_stdout_and_stderr_are_apart_and_escaped() -> None:
    state = reduce(
        reduce(start(1, fresh=False), Started(1)),
        Printed(1, (Chunk("stdout", "<b>1</b>\n"), Chunk("stderr", "oops\n"))),
    )
    html = output_html(state)
    assert '<span data-stream="stdout">&lt;b&gt;1&lt;/b&gt;\n</span>' in html
    assert '<span data-stream="stderr">oops\n</span>' in html
    assert 'data-action="stop-code"' in html


def test_a_finished_run_has_no_stop_and_shows_the_traceback() -> None:
    state = reduce(reduce(start(1, fresh=False), Started(1)), Finished(1, "Traceback <x>"))
    html = output_html(state)
    assert "stop-code" not in html
    assert 'data-stream="traceback"' in html and "Traceback &lt;x&gt;" in html


def test_killed_attributes_name_the_limit() -> None:
    state = reduce(reduce(start(1, fresh=False), Started(1)), Killed(1, "time"))
    assert output_attributes(state) == {
        "data-run-state": "killed",
        "data-limit": "time",
        "data-state-kept": "false",
    }


def test_files_are_links_and_images_are_shown() -> None:
    files = (
        OutFile("a.png", "image/png", 1),
        OutFile("b.svg", "image/svg+xml", 1),
        OutFile("t.csv", "text/csv", 1),
    )
    state = reduce(reduce(reduce(start(1, fresh=False), Started(1)), Wrote(1, files)), Finished(1))
    html = output_html(state, {"a.png": "blob:x/1", "t.csv": "blob:x/2", "b.svg": "blob:x/3"})
    assert '<img class="code-run-image" src="blob:x/1" alt="a.png">' in html
    assert 'data-code-file="t.csv" href="blob:x/2" download="t.csv"' in html
    assert '<img class="code-run-image" src="blob:x/3" alt="b.svg">' in html
    assert html.count("<img") == 2


@pytest.mark.parametrize(
    ("info", "finished", "runs"),
    [
        pytest.param("python", True, True, id="python-finished"),
        pytest.param("py", True, True, id="py-alias"),
        pytest.param("python", False, False, id="python-streaming"),
        pytest.param("js", True, False, id="other-language"),
        pytest.param("", True, False, id="no-language"),
    ],
)
def test_run_button_only_on_finished_python_blocks(info: str, finished: bool, runs: bool) -> None:
    html = code_block_html("print(1)\n", info, finished=finished)
    assert ('data-action="run-code"' in html) is runs
