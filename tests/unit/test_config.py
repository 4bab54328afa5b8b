"""Client settings from the URL query."""

from __future__ import annotations

from typing import Any

import pytest

from app.run.config import SERVER_WORD_GRACE_MS, ClientConfig


def test_defaults_follow_the_spec() -> None:
    config = ClientConfig()
    assert (config.first_event_timeout_ms, config.idle_timeout_ms, config.total_timeout_ms) == (
        30_000,
        60_000,
        600_000,
    )
    assert (config.cancel_deadline_ms, config.max_event_bytes) == (5_000, 1_048_576)


QUERIES = [
    pytest.param({"idleTimeoutMs": "1500"}, {"idle_timeout_ms": 1500}, 0, id="one-value"),
    pytest.param(
        {
            "firstEventTimeoutMs": "10",
            "totalTimeoutMs": "20",
            "cancelDeadlineMs": "30",
            "cancelPollMs": "5",
            "maxEventBytes": "99",
        },
        {
            "first_event_timeout_ms": 10,
            "total_timeout_ms": 20,
            "cancel_deadline_ms": 30,
            "cancel_poll_ms": 5,
            "max_event_bytes": 99,
        },
        0,
        id="every-value",
    ),
    pytest.param({"idleTimeoutMs": " 250 "}, {"idle_timeout_ms": 250}, 0, id="spaces-trimmed"),
    pytest.param({"idleTimeoutMs": "abc"}, {"idle_timeout_ms": 60_000}, 1, id="not-a-number"),
    pytest.param({"idleTimeoutMs": "-5"}, {"idle_timeout_ms": 60_000}, 1, id="negative"),
    pytest.param({"idleTimeoutMs": "0"}, {"idle_timeout_ms": 60_000}, 1, id="zero"),
    pytest.param({"idleTimeoutMs": "1.5"}, {"idle_timeout_ms": 60_000}, 1, id="fraction"),
    pytest.param({"idleTimeoutMs": "١٢"}, {"idle_timeout_ms": 60_000}, 1, id="non-ascii-digits"),
    pytest.param({"idleTimeoutMs": "9" * 40}, {"idle_timeout_ms": 60_000}, 1, id="absurdly-long"),
    pytest.param({"idleTimeoutMs": ""}, {"idle_timeout_ms": 60_000}, 1, id="empty"),
    pytest.param({"other": "x"}, {"idle_timeout_ms": 60_000}, 0, id="unknown-names-ignored"),
]


@pytest.mark.parametrize(("query", "expected", "warnings"), QUERIES)
def test_from_query(query: dict[str, str], expected: dict[str, Any], warnings: int) -> None:
    config = ClientConfig.from_query(query)
    assert {name: getattr(config, name) for name in expected} == expected
    assert len(config.warnings) == warnings


def test_a_warning_names_the_parameter_and_the_default_kept() -> None:
    (warning,) = ClientConfig.from_query({"totalTimeoutMs": "soon"}).warnings
    assert warning == "totalTimeoutMs='soon' is not a positive integer; using 600000"


@pytest.mark.parametrize(
    ("first_wait", "idle_wait", "first", "idle"),
    [
        pytest.param(None, None, 30_000, 60_000, id="the-server-says-nothing"),
        pytest.param(60_000, 120_000, 70_000, 130_000, id="longer-than-the-server"),
        pytest.param(5_000, 10_000, 30_000, 60_000, id="the-page-already-waits-longer"),
        pytest.param(25_000, None, 35_000, 60_000, id="only-the-first-event"),
    ],
)
def test_the_page_waits_longer_than_the_server_by_the_grace(
    first_wait: int | None, idle_wait: int | None, first: int, idle: int
) -> None:
    config = ClientConfig().waiting_longer_than(first_wait, idle_wait)

    assert (config.first_event_timeout_ms, config.idle_timeout_ms) == (first, idle)
    assert config.total_timeout_ms == ClientConfig().total_timeout_ms
    assert SERVER_WORD_GRACE_MS == 10_000
