"""A generated image's card (app/ui/image.py): never "Generating image…" once its answer ended."""

from __future__ import annotations

import pytest

from app.ui.image import image_html, shown_status
from app.wire.parts import ImagePart
from tests.unit.html_tree import parse_html


@pytest.mark.parametrize(
    ("part", "run_live", "status"),
    [
        pytest.param(ImagePart("i1"), True, "pending", id="pending-while-the-answer-runs"),
        pytest.param(ImagePart("i1"), False, "unfinished", id="pending-after-the-answer-ended"),
        pytest.param(ImagePart("i1", status="failed"), False, "failed", id="failed-stays-failed"),
        pytest.param(
            ImagePart("i1", status="completed", url="https://x.test/a.png"),
            False,
            "completed",
            id="completed-stays-completed",
        ),
    ],
)
def test_shown_status(part: ImagePart, run_live: bool, status: str) -> None:
    assert shown_status(part, run_live=run_live) == status


def test_an_image_of_an_ended_answer_says_it_was_not_finished() -> None:
    figure = parse_html(image_html(ImagePart("i1", prompt="a fox"), run_live=False)).one(
        "data-image-id", "i1", tag="figure"
    )

    assert figure.get("data-image-status") == "unfinished"
    assert "Generating" not in figure.text
    assert "not finished" in figure.text
