"""The page's words and names for a chat as a file (app/ui/export_menu.py)."""

from __future__ import annotations

import pytest

from app.ui.export_menu import export_file_name, export_menu_html, import_refused_words


def test_the_menu_offers_each_format_as_an_export_chat_action() -> None:
    html = export_menu_html()
    assert html.count('data-action="export-chat"') == 2
    assert 'data-format="markdown"' in html and 'data-format="json"' in html
    assert "Markdown" in html and "JSON" in html


@pytest.mark.parametrize(
    ("disposition", "title", "name"),
    [
        pytest.param('attachment; filename="Rivers.md"', "x", "Rivers.md", id="the-servers"),
        pytest.param(None, "Rivers & lakes?", "Rivers-lakes.md", id="made-from-the-title"),
        pytest.param('attachment; filename="../../x"', "A", "A.md", id="a-path-is-refused"),
        pytest.param(None, "", "Chat.md", id="nothing-left"),
    ],
)
def test_a_download_is_named_by_the_server_else_by_the_title(
    disposition: str | None, title: str, name: str
) -> None:
    assert export_file_name(disposition, title, "markdown") == name


def test_a_refused_file_is_said_with_its_name_and_reason() -> None:
    words = import_refused_words("old.json", "exportVersion is 9.")
    assert words == "“old.json” was not imported: exportVersion is 9. Nothing was changed."
