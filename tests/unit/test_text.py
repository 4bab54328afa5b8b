"""The append-only immutable text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.wire.text import Text


def test_append_returns_a_new_value_and_keeps_the_old() -> None:
    a = Text("he")
    b = a.append("llo")
    assert (str(a), str(b), len(b), repr(b)) == ("he", "hello", 5, "Text('hello')")
    assert a.append("") is a


def test_branching_from_an_old_version_copies_instead_of_overwriting() -> None:
    base = Text().append("a")
    newer = base.append("b")
    assert str(newer) == "ab"  # cache the longer join first
    branch = base.append("c")
    assert (str(base), str(newer), str(branch)) == ("a", "ab", "ac")


def test_equality_and_hash_follow_the_string() -> None:
    assert Text("ab") == Text("a").append("b")
    assert hash(Text("ab")) == hash(Text("a").append("b"))
    assert Text("a") != Text("b")
    assert Text("a") != "a"
    assert not Text() and Text("x")


@given(st.lists(st.tuples(st.integers(min_value=0, max_value=20), st.text(max_size=4))))
def test_any_append_history_matches_plain_strings(steps: list[tuple[int, str]]) -> None:
    versions, expected = [Text()], [""]
    for pick, delta in steps:
        index = pick % len(versions)
        versions.append(versions[index].append(delta))
        expected.append(expected[index] + delta)
        assert str(versions[pick % len(versions)]) == expected[pick % len(versions)]
    assert [str(v) for v in versions] == expected


@pytest.mark.parametrize("start", ["", "ab"])
def test_since_and_len_read_a_growing_text_without_joining_it(start: str) -> None:
    text = Text(start)
    versions = [text]
    for delta in ("x", "", "yz", "ü", "end"):
        text = text.append(delta)
        versions.append(text)
    whole = str(text)
    assert len(text) == len(whole)
    for offset in range(-1, len(whole) + 2):
        assert text.since(offset) == whole[max(offset, 0) :], offset
    assert all(text.extends(version) for version in versions)
    assert not versions[1].extends(text)


def test_a_branch_of_an_older_version_does_not_extend_the_newer_one() -> None:
    base = Text("a")
    newer = base.append("b")
    branch = base.append("c")  # NOTE: a second version appended to the same older one
    assert str(branch) == "ac" and str(newer) == "ab"
    assert not branch.extends(newer) and not newer.extends(branch)
    assert not branch.extends(base)  # a copy: a reader starts over instead of trusting a tail
