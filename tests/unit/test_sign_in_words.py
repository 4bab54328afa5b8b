"""The sign-in form's words for a refusal, with and without a wait."""

from __future__ import annotations

from app.ui.sign_in import sign_in_refusal


def test_a_wait_is_said_in_seconds_with_the_code() -> None:
    text = sign_in_refusal("too_many_attempts", "server words", 7)
    assert text == "Too many wrong passwords; wait before trying again. Try again in 7 s." + (
        " (too_many_attempts)"
    )


def test_no_wait_says_the_words_of_the_code() -> None:
    text = sign_in_refusal("invalid_credentials", "server words")
    assert text == "That name and password do not match. (invalid_credentials)"


def test_an_unknown_code_shows_the_servers_message() -> None:
    assert sign_in_refusal("odd_code", "the server's own words") == (
        "the server's own words (odd_code)"
    )
