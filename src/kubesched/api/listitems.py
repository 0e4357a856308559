"""A large ``kubectl`` List read by parts: its items left as text for a typed reader, and
the reader's strictness checked meanwhile on the whole text by a forked child.

:func:`kubesched.api.source.load_file` decodes a file into dicts and lists, then checks the
result against the text (repeated keys, ``NaN``, depth).  For the 200,000 Pods of a large
snapshot most of those dicts are never needed: :func:`kubesched.api.podquick.quick_pod`
decodes each Pod item straight into the fields the scheduler reads.  :func:`list_items`
gives it the items' text at once, and the same checks run on another core
(:mod:`kubesched.api.beside`), decoding the items a few thousand at a time, so the child
holds little memory.  :func:`mapping` decodes an item the quick path leaves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from kubesched.api import beside, jsonscan, source

__all__ = ["ListItems", "list_items", "mapping"]

_OBJECT = re.compile(rb"[ \t\r\n]*\{")
"""JSON text whose value is an object."""


class _ListText(msgspec.Struct):
    """A List's text with its items left undecoded."""

    items: list[msgspec.Raw]
    kind: Any = None


class ListItems:
    """The items of a large JSON file's one List, undecoded (:func:`list_items`), while a
    forked child checks the whole text: :meth:`exact` waits for its verdict."""

    def __init__(self, items: list[msgspec.Raw], verdict: Callable[[], bytes]) -> None:
        self.items = items
        self._verdict = verdict

    def exact(self) -> bool:
        """Whether decoding the text by parts decodes what the exact decoder would, within
        the nesting limit: no repeated key, no ``NaN``, no number beyond a float's range,
        no unpaired surrogate, no invalid text (else read the file with
        :func:`~kubesched.api.source.load_file`, which names the problem).  Waits for the
        child: call it once, whatever happened meanwhile."""
        return self._verdict() == b"exact"


def list_items(path: str) -> ListItems | None:
    """For a JSON file of :data:`~kubesched.api.beside.SIDE_BYTES` or more holding one
    ``...List`` object (``kubectl get nodes,pods -A -o json``): its items as text, with the
    check running beside.  None for any other file, or when the system does not fork: read
    it with :func:`~kubesched.api.source.load_file`."""
    if source.check_file(path) < beside.SIDE_BYTES:
        return None
    data = source.read_bytes(path)
    if _OBJECT.match(data) is None:
        return None
    try:
        text = msgspec.json.decode(data, type=_ListText)
    except msgspec.DecodeError:
        return None
    if type(text.kind) is not str or not text.kind.endswith("List"):
        return None
    verdict = beside.run(lambda: _verdict(data), len(data))
    return None if verdict is None else ListItems(text.items, verdict)


def _verdict(data: bytes) -> bytes:
    """``b"exact"`` when ``data`` nests at most :data:`~kubesched.api.source.MAX_DEPTH`
    levels, decodes, and holds as many keys as it decodes to (no key repeated: the check of
    :func:`~kubesched.api.source.load_file`), decoded part by part."""
    depth, written = jsonscan.text_shape(data)
    if depth > source.MAX_DEPTH:
        return b"deep"
    decode, encode = msgspec.json.Decoder().decode, msgspec.json.encode
    try:
        top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
        decoded = len(top)
        for key, value in top.items():
            if key != "items":
                decoded += jsonscan.decoded_keys(decode(value), encode)
                continue
            items = msgspec.json.decode(value, type=list[msgspec.Raw])
            for at in range(0, len(items), jsonscan.ENCODE_BATCH):
                part = [decode(item) for item in items[at : at + jsonscan.ENCODE_BATCH]]
                decoded += jsonscan.decoded_keys(part, encode)
    except msgspec.DecodeError:
        return b"refused"
    return b"exact" if decoded == written else b"repeated"


_decode: Callable[[msgspec.Raw], Any] = msgspec.json.Decoder().decode


def mapping(item: msgspec.Raw) -> dict[str, Any] | None:
    """The decoded JSON text ``item`` (dicts, lists and scalars, as the reader decodes them)
    when it is an object; None otherwise, or if it does not decode."""
    try:
        value = _decode(item)
    except msgspec.DecodeError:
        return None
    return value if type(value) is dict else None
