"""JSON through the fast decoder gives what the exact one gives: the same values (ints stay
exact, floats round alike), the same refusals (a repeated key anywhere, ``NaN``), and the key
counts the check relies on are right whatever the strings hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import beside, jsonscan, source
from kubesched.api.errors import InputError

TRICKY = st.sampled_from(['"', "\\", '\\"', '":', '\\":', "[", "}", ":", "a", "é", "\n", "\ud7ff"])
TEXT = st.lists(TRICKY, max_size=6).map("".join)
NUMBERS = st.integers(min_value=-(2**80), max_value=2**80) | st.floats(
    allow_nan=False, allow_infinity=False
)
VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=40,
)


def keys(value: Any) -> int:
    if isinstance(value, dict):
        return len(value) + sum(keys(v) for v in value.values())
    if isinstance(value, list):
        return sum(keys(v) for v in value)
    return 0


def same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (1 and 1.0 differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.sampled_from((None, 1)), st.booleans())
def test_values_and_key_counts_agree_with_the_exact_decoder(
    value: Any, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps({"items": [value, {"k": value}]}, indent=indent, ensure_ascii=ascii_only)
    expected = json.loads(text)
    _, written = jsonscan.text_shape(text.encode())
    assert written == keys(expected)
    assert jsonscan.decoded_keys(expected, msgspec.json.encode) == keys(expected)
    assert same(source.load_text(text)[0], expected)


@pytest.mark.parametrize(
    "text",
    [
        '{"items": [{"a": 1}, {"b": {"c": 2, "c": 3}}]}',
        '{"a": 1, "b": [1, 2], "a": 1}',
        '[{"x\\"": 1, "x\\u0022": 2}]',
        '{"k" : 1, "k" : 2}',
    ],
)
def test_a_repeated_key_anywhere_is_refused(text: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="already set in map"):
        source.load_text(text)
    path = tmp_path / "list.json"
    path.write_text(text)
    with pytest.raises(InputError, match="already set in map"):
        source.load_file(str(path))


def test_values_the_fast_decoder_takes_otherwise_go_the_exact_way() -> None:
    big = source.load_text('{"n": 123456789012345678901234567890, "f": 1e400, "s": "\\ud800"}')
    # an unpaired surrogate reads as U+FFFD, as the API server's (Go's) decoder reads it
    assert big == [{"n": 123456789012345678901234567890, "f": float("inf"), "s": "\ufffd"}]
    with pytest.raises(InputError, match="NaN is not a JSON number"):
        source.load_text('{"n": NaN}')


def test_ordinary_json_is_decoded_without_the_exact_decoder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the standard library's decoder ran")

    monkeypatch.setattr(source.json, "loads", refuse)
    path = tmp_path / "pods.json"
    path.write_text('{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "a:b"}}]}')
    assert source.load_file(str(path))[0]["items"][0]["metadata"]["name"] == "a:b"


def test_small_chunks_count_the_same_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"a": [{"b": ['x":]]]', {"c:": [[["\\\\"]]]}]}], "d": "{{{{", "e": {}}
    text = json.dumps(value).encode()
    monkeypatch.setattr(jsonscan, "SCAN_CHUNK", 3)
    assert jsonscan.text_shape(text) == (8, 5)


@pytest.mark.parametrize("side", [False, True], ids=["here", "forked"])
def test_the_side_scan_refuses_and_accepts_alike(
    side: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Large files are scanned by a forked child (beside.SIDE_BYTES lowered to 1 here): its
    key count still catches a repeated key, its depth the nesting limit."""
    monkeypatch.setattr(beside, "SIDE_BYTES", 1 if side else 2**40)
    forks = 0
    fork = source.os.fork

    def counted() -> int:
        nonlocal forks
        forks += 1
        return fork()

    monkeypatch.setattr(source.os, "fork", counted)
    path = tmp_path / "list.json"
    path.write_text('{"items": [{"a": 1}, {"b": {"c": 2, "c": 3}}]}')
    with pytest.raises(InputError, match="already set in map"):
        source.load_file(str(path))
    path.write_text("[" * (source.MAX_DEPTH + 1) + "]" * (source.MAX_DEPTH + 1))
    with pytest.raises(InputError, match="nested deeper"):
        source.load_file(str(path))
    path.write_text('{"items": [{"a": [1, {"b": "}:"}]}]}')
    assert source.load_file(str(path)) == [{"items": [{"a": [1, {"b": "}:"}]}]}]
    assert forks == (3 if side else 0)


def test_a_side_scan_that_gives_no_answer_is_done_here(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    parent = source.os.getpid()
    scan = jsonscan.text_shape
    scans_here = 0

    def failing_in_the_child(data: bytes) -> tuple[int, int]:
        nonlocal scans_here
        if source.os.getpid() != parent:
            raise MemoryError
        scans_here += 1
        return scan(data)

    monkeypatch.setattr(beside, "SIDE_BYTES", 1)
    monkeypatch.setattr(jsonscan, "text_shape", failing_in_the_child)
    path = tmp_path / "list.json"
    path.write_text('{"a": {"b": 1, "b": 2}}')
    with pytest.raises(InputError, match="already set in map"):
        source.load_file(str(path))
    assert scans_here == 1
