"""The Host allowlist's pure parts: a header's name, and the names a config answers to."""

from __future__ import annotations

import dataclasses

import pytest

from server.config import Config
from server.http.hosts import LOOPBACK_NAMES, allowed_host_names, host_name


@pytest.mark.parametrize(
    ("value", "name"),
    [
        pytest.param("Example.ORG:8000", "example.org", id="lowercased-port-dropped"),
        pytest.param("example.org.", "example.org", id="trailing-dot"),
        pytest.param("[::1]:8000", "::1", id="ipv6-with-port"),
        pytest.param("[::1]", "::1", id="ipv6"),
        pytest.param("127.0.0.1", "127.0.0.1", id="ip"),
    ],
)
def test_host_name(value: str, name: str) -> None:
    assert host_name(value) == name


@pytest.mark.parametrize(
    ("host", "public", "names"),
    [
        pytest.param("127.0.0.1", (), LOOPBACK_NAMES, id="loopback"),
        pytest.param("0.0.0.0", (), LOOPBACK_NAMES, id="every-address-is-loopback-too"),
        pytest.param("10.1.2.3", (), {"10.1.2.3"}, id="a-specific-address-only"),
        pytest.param(
            "127.0.0.1",
            ("https://Chat.Example.org:8443/riacho",),
            LOOPBACK_NAMES | {"chat.example.org"},
            id="public-url-adds-its-name",
        ),
    ],
)
def test_allowed_host_names(host: str, public: tuple[str, ...], names: frozenset[str]) -> None:
    config = dataclasses.replace(Config(), host=host, public_urls=public)
    assert allowed_host_names(config) == names
