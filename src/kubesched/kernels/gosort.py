"""Go's unstable sort, ported: the order upstream leaves equal elements in.

Upstream sorts some lists with ``sort.Slice`` (and ``sort.Sort``), whose result for elements
its ``less`` cannot order (equal priority *and* equal start time among preemption victims)
is not the input order: Go (1.19 and later) runs pattern-defeating quicksort
(``pdqsort_func`` in ``src/sort/zsortfunc.go``): insertion sort up to 12 elements (stable),
and above that median-of-three or Tukey-ninther pivots, partitions that swap equal elements
across the pivot, a partial insertion sort for likely-sorted input, pattern breaking with a
deterministic xorshift seeded by the length, and heapsort after ``bits.Len(n)`` unbalanced
partitions.  Where such an order decides something (which victims a preemption reprieves),
kubesched must sort as Go does, from the same input order.

:func:`sort_slice` is ``sort.Slice(x, less)`` (and ``sort.Sort``: ``zsortinterface.go``'s
``pdqsort`` is the same code over ``Interface``).  ``slices.SortFunc(x, cmp)``'s
``pdqsortCmpFunc`` (``src/slices/zsortanyfunc.go``) is generated from the same template
too and makes the same comparisons and swaps, with ``less(i, j)`` being
``cmp(x[i], x[j]) < 0``: a ``cmp`` that returns 0 where ``less`` is false both ways gives the
same order.  (Its ``cmp`` may disagree with such a ``less`` when it is not antisymmetric;
upstream's uses here are ``less`` functions.)

Verified against Go itself: ``tests/kernels/test_gosort.py`` over the outputs
``tests/data/gosort/gen_fixture.go`` recorded (``tests/data/gosort/fixture.json``), and
against a fresh ``go run`` when Go is on the path.

Each function sorts ``data[a:b]`` in place by ``less(x, y)`` on elements (Go's ``Less(i, j)``
reads only ``data[i]`` and ``data[j]``, and its ``Swap`` swaps them, so sorting the elements
themselves is the same walk).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
Less = Callable[[T, T], bool]

MAX_INSERTION = 12
"""Up to this many elements pdqsort is an insertion sort (stable)."""
_SHORTEST_NINTHER = 50
_MAX_SWAPS = 4 * 3
_UNKNOWN, _INCREASING, _DECREASING = 0, 1, 2
_MASK64 = (1 << 64) - 1


class _Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K", bound=_Ordered)


def sort_slice(data: list[T], less: Less[T]) -> None:
    """Go's ``sort.Slice(data, less)``: ``data`` sorted in place, unstably, as Go sorts it."""
    n = len(data)
    _pdqsort(data, 0, n, n.bit_length(), less)


def sorted_by_key(items: Sequence[T], key: Callable[[T], K]) -> list[T]:
    """``items`` as Go's ``sort.Slice`` orders them with ``less(a, b) = key(a) < key(b)``
    (a new list).  Up to :data:`MAX_INSERTION` items Go's insertion sort is stable, so
    Python's stable ``sorted`` gives the same order at C speed."""
    if len(items) <= MAX_INSERTION:
        return sorted(items, key=key)
    pairs = [(key(item), i) for i, item in enumerate(items)]
    sort_slice(pairs, lambda x, y: x[0] < y[0])
    return [items[i] for _, i in pairs]


def _insertion_sort(data: list[T], a: int, b: int, less: Less[T]) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and less(data[j], data[j - 1]):
            data[j], data[j - 1] = data[j - 1], data[j]
            j -= 1


def _sift_down(data: list[T], lo: int, hi: int, first: int, less: Less[T]) -> None:
    root = lo
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and less(data[first + child], data[first + child + 1]):
            child += 1
        if not less(data[first + root], data[first + child]):
            return
        data[first + root], data[first + child] = data[first + child], data[first + root]
        root = child


def _heap_sort(data: list[T], a: int, b: int, less: Less[T]) -> None:
    first, lo, hi = a, 0, b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(data, i, hi, first, less)
    for i in range(hi - 1, -1, -1):
        data[first], data[first + i] = data[first + i], data[first]
        _sift_down(data, lo, i, first, less)


def _pdqsort(data: list[T], a: int, b: int, limit: int, less: Less[T]) -> None:
    was_balanced = True  # whether the last partitioning was reasonably balanced
    was_partitioned = True  # whether the slice was already partitioned
    while True:
        length = b - a
        if length <= MAX_INSERTION:
            _insertion_sort(data, a, b, less)
            return
        if limit == 0:  # too many bad pivots
            _heap_sort(data, a, b, less)
            return
        if not was_balanced:
            _break_patterns(data, a, b)
            limit -= 1
        pivot, hint = _choose_pivot(data, a, b, less)
        if hint == _DECREASING:
            _reverse_range(data, a, b)
            pivot = (b - 1) - (pivot - a)
            hint = _INCREASING
        if (
            was_balanced
            and was_partitioned
            and hint == _INCREASING
            and _partial_insertion_sort(data, a, b, less)
        ):
            return
        if a > 0 and not less(data[a - 1], data[pivot]):
            # many duplicates: the elements equal to the pivot, then the greater ones
            a = _partition_equal(data, a, b, pivot, less)
            continue
        mid, was_partitioned = _partition(data, a, b, pivot, less)
        left, right = mid - a, b - mid
        threshold = length // 8
        if left < right:
            was_balanced = left >= threshold
            _pdqsort(data, a, mid, limit, less)
            a = mid + 1
        else:
            was_balanced = right >= threshold
            _pdqsort(data, mid + 1, b, limit, less)
            b = mid


def _partition(data: list[T], a: int, b: int, pivot: int, less: Less[T]) -> tuple[int, bool]:
    """One quicksort partition around ``data[pivot]``: ``(its new index, already
    partitioned)``."""
    data[a], data[pivot] = data[pivot], data[a]
    i, j = a + 1, b - 1
    while i <= j and less(data[i], data[a]):
        i += 1
    while i <= j and not less(data[j], data[a]):
        j -= 1
    if i > j:
        data[j], data[a] = data[a], data[j]
        return j, True
    data[i], data[j] = data[j], data[i]
    i += 1
    j -= 1
    while True:
        while i <= j and less(data[i], data[a]):
            i += 1
        while i <= j and not less(data[j], data[a]):
            j -= 1
        if i > j:
            break
        data[i], data[j] = data[j], data[i]
        i += 1
        j -= 1
    data[j], data[a] = data[a], data[j]
    return j, False


def _partition_equal(data: list[T], a: int, b: int, pivot: int, less: Less[T]) -> int:
    data[a], data[pivot] = data[pivot], data[a]
    i, j = a + 1, b - 1
    while True:
        while i <= j and not less(data[a], data[i]):
            i += 1
        while i <= j and less(data[a], data[j]):
            j -= 1
        if i > j:
            return i
        data[i], data[j] = data[j], data[i]
        i += 1
        j -= 1


def _partial_insertion_sort(data: list[T], a: int, b: int, less: Less[T]) -> bool:
    """Shift a few out-of-order pairs; whether ``data[a:b]`` is sorted at the end."""
    max_steps, shortest_shifting = 5, 50
    i = a + 1
    for _ in range(max_steps):
        while i < b and not less(data[i], data[i - 1]):
            i += 1
        if i == b:
            return True
        if b - a < shortest_shifting:
            return False
        data[i], data[i - 1] = data[i - 1], data[i]
        if i - a >= 2:  # the smaller one to the left
            for j in range(i - 1, 0, -1):
                if not less(data[j], data[j - 1]):
                    break
                data[j], data[j - 1] = data[j - 1], data[j]
        if b - i >= 2:  # the greater one to the right
            for j in range(i + 1, b):
                if not less(data[j], data[j - 1]):
                    break
                data[j], data[j - 1] = data[j - 1], data[j]
    return False


def _break_patterns(data: list[T], a: int, b: int) -> None:
    length = b - a
    if length < 8:
        return
    state = length  # xorshift(length), a uint64
    modulus = 1 << length.bit_length()  # nextPowerOfTwo
    start = a + (length // 4) * 2
    for idx in range(start - 1, start + 2):
        state ^= (state << 13) & _MASK64
        state ^= state >> 7
        state ^= (state << 17) & _MASK64
        other = state & (modulus - 1)
        if other >= length:
            other -= length
        data[idx], data[a + other] = data[a + other], data[idx]


def _choose_pivot(data: list[T], a: int, b: int, less: Less[T]) -> tuple[int, int]:
    """The pivot's index and whether ``data[a:b]`` looked increasing or decreasing."""
    n = b - a
    swaps = [0]
    i, j, k = a + n // 4 * 1, a + n // 4 * 2, a + n // 4 * 3
    if n >= 8:
        if n >= _SHORTEST_NINTHER:  # Tukey's ninther
            i = _median(data, i - 1, i, i + 1, swaps, less)
            j = _median(data, j - 1, j, j + 1, swaps, less)
            k = _median(data, k - 1, k, k + 1, swaps, less)
        j = _median(data, i, j, k, swaps, less)
    if swaps[0] == 0:
        return j, _INCREASING
    if swaps[0] == _MAX_SWAPS:
        return j, _DECREASING
    return j, _UNKNOWN


def _order2(data: list[T], a: int, b: int, swaps: list[int], less: Less[T]) -> tuple[int, int]:
    if less(data[b], data[a]):
        swaps[0] += 1
        return b, a
    return a, b


def _median(data: list[T], a: int, b: int, c: int, swaps: list[int], less: Less[T]) -> int:
    a, b = _order2(data, a, b, swaps, less)
    b, c = _order2(data, b, c, swaps, less)
    a, b = _order2(data, a, b, swaps, less)
    return b


def _reverse_range(data: list[T], a: int, b: int) -> None:
    data[a:b] = data[a:b][::-1]
