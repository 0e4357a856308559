"""Single-field mutations of a document, for the tests that attack an input format: every
field path of a parsed YAML/JSON document, and a copy with one field replaced."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

Where = tuple[str | int, ...]
"""A field path: mapping keys and list indices."""

WRONG_VALUES: tuple[Any, ...] = (None, "x", 7, [1], {"a": 1}, -1)
"""A value of every other JSON type, and a negative number."""


def paths(obj: Any, here: Where = (), *, items: int | None = None) -> Iterator[Where]:
    """Every field and list item below ``obj`` (the first ``items`` of each list, or all)."""
    if here:
        yield here
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from paths(value, (*here, key), items=items)
    elif isinstance(obj, list):
        for i, value in enumerate(obj if items is None else obj[:items]):
            yield from paths(value, (*here, i), items=items)


def mutated(doc: Any, where: Where, value: Any) -> Any:
    """A deep copy of ``doc`` with the field at ``where`` set to ``value``."""
    out = copy.deepcopy(doc)
    at = out
    for key in where[:-1]:
        at = at[key]
    at[where[-1]] = value
    return out
