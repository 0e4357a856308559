"""A numbered log of recent changes, for readers that keep what they derived from a version.

The cluster cache journals the node row each change touched and the nominator the node each
nomination change touched; a reader that remembers :attr:`ChangeJournal.version` asks
:meth:`ChangeJournal.since` which entries came after it and redoes only those, or rebuilds
when the journal no longer reaches back that far (it keeps between ``keep / 2`` and ``keep``
entries: past ``keep`` the older half is dropped).
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class ChangeJournal(Generic[T]):
    """The entry of each change since :attr:`version` ``- len(entries)``: entry ``i`` took
    the version from ``base + i`` to the next."""

    __slots__ = ("_base", "_entries", "_keep", "version")

    def __init__(self, keep: int) -> None:
        self.version = 0
        """Bumped on every change."""
        self._keep = keep
        self._entries: list[T] = []
        self._base = 0

    def add(self, entry: T) -> None:
        """One change, touching ``entry``."""
        self.version += 1
        entries = self._entries
        entries.append(entry)
        if len(entries) > self._keep:
            self._trim()

    def extend(self, entries: list[T]) -> None:
        """:meth:`add` of each of ``entries`` in order (in slices up to each trim)."""
        journal, keep = self._entries, self._keep
        i = 0
        while i < len(entries):
            take = entries[i : i + keep + 1 - len(journal)]
            journal.extend(take)
            self.version += len(take)
            i += len(take)
            if len(journal) > keep:
                self._trim()

    def since(self, version: int) -> list[T] | None:
        """The entries of the changes after ``version`` (an earlier value of
        :attr:`version`), in order, with repeats; None when the journal no longer reaches
        back that far (or ``version`` is not one of this journal's)."""
        start = version - self._base
        if start < 0 or version > self.version:
            return None
        return self._entries[start:]

    def _trim(self) -> None:
        drop = len(self._entries) // 2
        del self._entries[:drop]
        self._base += drop
