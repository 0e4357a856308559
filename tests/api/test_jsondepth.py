"""``json_depth`` (brackets outside strings, over the text's bytes) agrees with the depth of
the decoded value, whatever the strings hold (quotes, backslashes, brackets), and a JSON
file nested deeper than ``MAX_DEPTH`` is still refused with the same message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import jsonscan, source
from kubesched.api.errors import InputError

TRICKY = st.sampled_from(['"', "\\", '\\"', '\\\\"', "[", "]", "{", "}", "a", "é", "\n"])
TEXT = st.lists(TRICKY, max_size=6).map("".join)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=40,
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@settings(max_examples=400, deadline=None)
@given(VALUES, st.sampled_from((None, 2)), st.booleans())
def test_depth_of_the_text_is_the_depth_of_the_value(
    value: Any, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert jsonscan.json_depth(text) == depth(value)


def test_small_chunks_give_the_same_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"a": [{"b": ['x"]]]', {"c": [[["\\\\"]]]}]}], "d": "{{{{"}
    text = json.dumps(value)
    monkeypatch.setattr(jsonscan, "SCAN_CHUNK", 3)
    assert jsonscan.json_depth(text) == depth(value) == 8


@pytest.mark.parametrize("levels", [source.MAX_DEPTH, source.MAX_DEPTH + 1])
def test_the_limit_is_kept(levels: int) -> None:
    text = "[" * (levels - 1) + '{"k": "[[[["}' + "]" * (levels - 1)
    if levels <= source.MAX_DEPTH:
        assert source.load_text(text)
    else:
        with pytest.raises(InputError, match=f"nested deeper than {source.MAX_DEPTH} levels"):
            source.load_text(text)


@settings(max_examples=200, deadline=None)
@given(VALUES, st.integers(min_value=1, max_value=9))
def test_any_chunk_size_gives_the_same_shape(value: Any, chunk: int) -> None:
    """The scan carries its string state and level across chunks: a chunk may end inside a
    string, between a backslash and the quote it escapes, or mid-bracket run."""
    data = json.dumps({"v": value, "w": [value]}).encode()
    whole = jsonscan.text_shape(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonscan, "SCAN_CHUNK", chunk)
        assert jsonscan.text_shape(data) == whole == (depth({"w": [value]}), 2 + 2 * keys(value))


def keys(value: Any) -> int:
    if isinstance(value, dict):
        return len(value) + sum(keys(v) for v in value.values())
    if isinstance(value, list):
        return sum(keys(v) for v in value)
    return 0
