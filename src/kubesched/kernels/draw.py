"""A bounded integer from a numpy generator, bit for bit as ``Generator.integers(n)``, cheaply.

The scheduler breaks ties among equally scored nodes with ``rng.integers(n)`` once per Pod
(:meth:`kubesched.scheduler.search.Search.pick`).  numpy spends most of that call on its
argument handling (dtype, bounds, array checks: 3-7 µs on the shared machine), which is a
few per cent of a light Pod's whole cycle.  :class:`BoundedDraw` makes the same draw with the
generator's own ``next_uint32`` (its ctypes interface: the function numpy's C code calls, so
the half-word PCG64 keeps buffered between two 32-bit draws is shared, and every other use
of the generator sees the same stream) and numpy's algorithm for a range that fits 32 bits
(``random_bounded_uint64_fill``: Lemire's multiply-and-reject, ``use_masked`` off as
``Generator.integers`` calls it): the same numbers in the same order, ~1 µs a draw where
``integers`` takes ~3 (a quiet moment of the shared machine).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

_U32 = 0x1_0000_0000


class BoundedDraw:
    """``draw(n)`` is ``int(rng.integers(n))`` for ``n >= 1``, with the same effect on
    ``rng`` (it takes the generator's lock, as ``integers`` does)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        bits = rng.bit_generator
        c: Any = bits.ctypes
        # called as a Python-API function: the GIL stays held (a CFUNCTYPE call drops and
        # takes it again, a chance for another thread to run in the middle of a Pod's cycle)
        address = ctypes.cast(c.next_uint32, ctypes.c_void_p).value
        assert address is not None
        proto = ctypes.PYFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)
        self._next: Callable[[Any], int] = proto(address)
        self._state: Any = c.state
        self._lock: Any = bits.lock

    def __call__(self, n: int) -> int:
        if n <= 1:
            if n < 1:
                raise ValueError(f"high <= 0: {n}")
            return 0  # numpy: an empty range draws nothing
        if n >= _U32:  # a range past 32 bits: numpy's 64-bit path
            return int(self.rng.integers(n))
        nxt, state = self._next, self._state
        with self._lock:
            m = nxt(state) * n
            left = m & 0xFFFF_FFFF
            if left < n:
                threshold = (_U32 - n) % n
                while left < threshold:
                    m = nxt(state) * n
                    left = m & 0xFFFF_FFFF
        return m >> 32
