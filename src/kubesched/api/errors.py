"""Errors for bad input: which file, which field path, what is wrong.

Every command catches :class:`InputError` at the edge and prints ``str(err)`` with exit code 2
(no traceback unless ``--debug``).  One error may carry several problems, so a config with
three mistakes is reported once, with all three.
"""

from __future__ import annotations

from collections.abc import Sequence


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
        self.problems: list[tuple[str, str]] = list(problems)
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


class CelRuntimeError(Exception):
    """A DRA selector failed while evaluating (no such key, no such overload, not a bool);
    raised by :mod:`kubesched.api.cel`, here so catching it needs no CEL library."""
