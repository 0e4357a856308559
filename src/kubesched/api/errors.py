"""Errors for bad input: which file, which field path, what is wrong.

Every command catches :class:`InputError` at the edge and prints ``str(err)`` with exit code 2
(no traceback unless ``--debug``).  One error may carry several problems, so a config with
three mistakes is reported once, with all three.  A problem quotes at most a short, escaped
excerpt of the input (:func:`excerpt`; every path and message is cut to
:data:`MAX_PROBLEM_CHARS`), so an error never prints a file back.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence


class InputError(Exception):
    """Malformed user input.  ``problems`` holds ``(field_path, message)`` pairs."""

    def __init__(
        self,
        problems: Sequence[tuple[str, str]] | str,
        *,
        file: str | None = None,
    ) -> None:
        if isinstance(problems, str):
            problems = [("", problems)]
        self.problems: list[tuple[str, str]] = [
            (_cut(path, MAX_PROBLEM_CHARS), _cut(msg, MAX_PROBLEM_CHARS)) for path, msg in problems
        ]
        self.file = file
        super().__init__(self.__str__())

    def with_file(self, file: str) -> InputError:
        """The same problems, attributed to ``file`` (kept if one was set already)."""
        return type(self)(self.problems, file=self.file or file)

    def __str__(self) -> str:
        lines = [f"{path}: {msg}" if path else msg for path, msg in self.problems]
        head = f"{self.file}: " if self.file else ""
        if len(lines) == 1:
            return head + lines[0]
        return (head or "invalid input: ") + "\n  " + "\n  ".join(lines)


EXCERPT_CHARS = 60
"""Longest excerpt of input content quoted in an error message."""

MAX_PROBLEM_CHARS = 300
"""Longest path or message of one problem: an error never carries more of a file than this."""


def check_fault_map(
    raw: Mapping[str, str] | None, field: str, keys: Mapping[str, int], kinds: Collection[str]
) -> dict[str, str]:
    """A declared fault map (``claimFaults``, ``volumeFaults``) checked: every key an object
    key ``KIND/NAME`` or ``KIND/NAMESPACE/NAME`` of a kind in ``keys`` (kind to its number of
    parts, 2 or 3), every value one of ``kinds``; all problems in one :class:`InputError`."""
    shapes = " or ".join(f"{k}/{'NAMESPACE/NAME' if n == 3 else 'NAME'}" for k, n in keys.items())
    out: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for key, kind in (raw or {}).items():
        parts = str(key).split("/")
        if keys.get(parts[0]) != len(parts) or not all(parts):
            problems.append((f"{field}[{key!r}]", f"must be {shapes}"))
        elif kind not in kinds:
            problems.append((f"{field}[{key!r}]", f"must be one of {sorted(kinds)}"))
        else:
            out[str(key)] = str(kind)
    if problems:
        raise InputError(problems)
    return out


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``value`` quoted for a message: a string as an escaped literal (``'a\\nb'``,
    ``'\\uff11'``), a mapping or list by its size, anything else by its ``repr``; cut to
    about ``limit`` characters."""
    if isinstance(value, dict):
        return f"a mapping of {len(value)} keys"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return _cut(ascii(value), limit)


def shape(value: object) -> str:
    """What ``value`` is, without any of its content: ``a string of 42 characters``, ``a
    list of 3 items``, ``an integer``.  For a file that is not the kind expected (a
    ``KEY=SECRET`` file passed by mistake), whose content must not be printed back."""
    if isinstance(value, str):
        return f"a string of {_count(len(value), 'character')}"
    if isinstance(value, dict):
        return f"a mapping of {_count(len(value), 'key')}"
    if isinstance(value, list):
        return f"a list of {_count(len(value), 'item')}"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    return f"a {type(value).__name__}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9./-]{0,62}")


def name_or_shape(value: object) -> str:
    """``value`` quoted when it is a short name (a ``kind``, an ``apiVersion``: letters,
    digits, ``.``, ``/``, ``-``), else only its :func:`shape`: what a file of another kind
    holds at those keys is not printed."""
    if isinstance(value, str) and _NAME.fullmatch(value):
        return repr(value)
    return shape(value)


def _cut(text: str, limit: int) -> str:
    if not text.isascii() or not text.isprintable():
        text = text.encode("unicode_escape").decode("ascii")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


class CelRuntimeError(Exception):
    """A DRA selector failed while evaluating (no such key, no such overload, not a bool);
    raised by :mod:`kubesched.api.cel`, here so catching it needs no CEL library."""
