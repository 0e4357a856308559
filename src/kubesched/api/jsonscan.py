"""Facts about JSON read from its bytes with array passes, for :mod:`kubesched.api.source`.

A 100 MB ``kubectl`` List holds millions of objects; walking the decoded containers in
Python to learn how deep they nest, or how many keys they hold, costs seconds.  The text
answers both in a few numpy passes: a byte is structure (``{`` ``}`` ``[`` ``]`` ``:``) when
it lies outside every string, and a quote opens or closes a string unless an odd run of
backslashes precedes it.  Every key is followed by exactly one ``:`` outside strings, and no
other ``:`` is, so those colons count the keys.

The key count is how the fast decoder's result is checked for repeated keys (which it
keeps silently, last one winning): :func:`text_shape` counts the keys written,
:func:`decoded_keys` the keys the decoded value holds; they differ exactly when some mapping
repeated a key.  The scans are meaningful for valid JSON only (decode it too).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ENCODE_BATCH", "SCAN_CHUNK", "decoded_keys", "json_depth", "text_shape"]

SCAN_CHUNK = 1 << 24
"""Bytes compared at a time (bounds the temporary arrays)."""

_QUOTE, _BACKSLASH, _COLON = ord('"'), ord("\\"), ord(":")
_OPEN, _CLOSE = ord("{"), ord("}")  # "[" and "]" are these with bit 0x20 clear


def json_depth(text: str) -> int:
    """The deepest nesting of objects and arrays in the JSON ``text`` (0 for a scalar)."""
    return text_shape(text.encode("utf-8"))[0]


def text_shape(data: bytes) -> tuple[int, int]:
    """``(depth, keys)`` of the JSON ``data``: the deepest nesting of objects and arrays (0
    for a scalar) and the number of keys written in all its objects.

    Each chunk is passed over a few times only, to pick out the bytes that are quotes or
    structure (:func:`_marks`); the rest looks at those alone: the quotes' running parity
    (an exclusive or) says which of them lie inside strings."""
    arr = np.frombuffer(data, dtype=np.uint8)  # (n,)
    escaped = _escaped_quotes(arr)  # int64 (E,), sorted
    inside, level, deepest, keys = 0, 0, 0, 0  # inside: a string is open at the chunk's start
    for start in range(0, arr.shape[0], SCAN_CHUNK):
        chunk = arr[start : start + SCAN_CHUNK]
        marks = _marks(chunk)  # bool (c,)
        lo, hi = np.searchsorted(escaped, (start, start + chunk.shape[0]))
        marks[escaped[lo:hi] - start] = False  # a quote inside a string is text
        kinds = chunk[marks]  # uint8 (S,): the marked bytes in order
        parity = np.bitwise_xor.accumulate((kinds == _QUOTE).view(np.uint8)) ^ inside  # (S,)
        outside = kinds[parity == 0]  # a closing quote has parity 0 too, an opening one 1
        keys += int(np.count_nonzero(outside == _COLON))
        outside |= 0x20  # "[" and "]" folded onto "{" and "}"
        steps = (outside == _OPEN).view(np.int8) - (outside == _CLOSE).view(np.int8)  # (B,)
        if steps.shape[0]:
            levels = np.cumsum(steps, dtype=np.int32) + level  # |steps| <= SCAN_CHUNK
            deepest = max(deepest, int(levels.max()))
            level = int(levels[-1])
        if parity.shape[0]:
            inside = int(parity[-1])
    return deepest, keys


def _marks(chunk: Any) -> Any:
    """bool ``(c,)``: which bytes of ``chunk`` (uint8 ``(c,)``) are a quote, a colon or a
    bracket; in place where it can (``{`` ``}`` ``[`` ``]`` are ``0x7B + 2k`` with bit 0x20
    set, ``k`` 0 or 1)."""
    folded = chunk | 0x20  # uint8 (c,)
    folded -= _OPEN
    folded &= 0xFD
    marks = folded == 0
    other = chunk == _COLON
    marks |= other
    np.equal(chunk, _QUOTE, out=other)
    marks |= other
    return marks


ENCODE_BATCH = 4096
"""List items encoded together by :func:`decoded_keys` (bounds each encoding's size)."""

_OPENS = np.zeros(256, dtype=bool)
_OPENS[[ord(c) for c in "{[,:\\"]] = True
"""Bytes before ``":`` in a compact encoding that leave it possibly not a key's end: after
structure the quote opens a string, after a backslash it is inside one."""


def decoded_keys(value: Any, dumps: Any) -> int:
    """The number of keys in all the mappings of the decoded ``value``, counted in its
    compact encoding by ``dumps`` (a C encoder: ``msgspec.json.encode``), which writes ``":``
    after every key and escapes every quote inside a string.  The top mapping and the lists
    directly under it are encoded :data:`ENCODE_BATCH` items at a time, so no encoding is
    as large as the input."""
    if type(value) is dict:
        return len(value) + sum(_keys_below(v, dumps) for v in value.values())
    return _keys_below(value, dumps)


def _keys_below(value: Any, dumps: Any) -> int:
    if type(value) is list:
        return sum(
            _keys_in(dumps(value[i : i + ENCODE_BATCH])) for i in range(0, len(value), ENCODE_BATCH)
        )
    if type(value) is dict:
        return _keys_in(dumps(value))
    return 0


def _keys_in(compact: bytes) -> int:
    """Keys in a compact encoding: each ``":`` ends one, unless a byte of :data:`_OPENS`
    precedes one of them (rare: a string that starts with ``:`` or holds ``":``); then the
    scan decides."""
    arr = np.frombuffer(compact, dtype=np.uint8)  # (n,)
    quotes = np.flatnonzero((arr[1:] == _COLON) & (arr[:-1] == _QUOTE))  # int64 (K,)
    if quotes.shape[0] and (quotes[0] == 0 or _OPENS[arr[quotes - 1]].any()):
        return text_shape(compact)[1]
    return int(quotes.shape[0])


def _escaped_quotes(data: Any) -> Any:
    """int64 ``(E,)``, sorted: positions of the quotes in ``data`` (uint8 ``(n,)``) that an
    odd run of backslashes precedes (inside a string, not its end)."""
    after = np.concatenate(
        [
            np.flatnonzero(data[start : start + SCAN_CHUNK] == _BACKSLASH) + (start + 1)
            for start in range(0, data.shape[0] - 1, SCAN_CHUNK)
        ]
        or [np.zeros(0, dtype=np.int64)]
    )
    after = after[after < data.shape[0]]
    cand = after[data[after] == _QUOTE]  # quotes right after a backslash
    runs = np.zeros(cand.shape[0], dtype=np.int64)
    live = np.arange(cand.shape[0])
    while live.shape[0]:
        pos = cand[live] - 1 - runs[live]
        keep = pos >= 0
        live, pos = live[keep], pos[keep]
        live = live[data[pos] == _BACKSLASH]
        runs[live] += 1
    return cand[runs % 2 == 1]
