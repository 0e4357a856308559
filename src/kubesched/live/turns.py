"""Binding cycles off the scheduling thread, without making the Scheduler thread-safe.

Upstream runs each binding cycle in its own goroutine, so a slow bind never stalls the
scheduling cycles behind it.  kubesched's Scheduler (cache, queue, plugins) is not
thread-safe, so a binding worker here runs scheduler code only while it holds a *turn*: it
asks for one, the scheduling thread grants it between two cycles and parks until it is given
back (a worker ending its turn hands it straight to the next worker that asked, so a chain of
turns wakes the parked thread once).  The worker gives its turn back around the slow part,
the HTTP work of the bind (:attr:`kubesched.live.binder.LiveApi.io` is
:meth:`Turns.released`), and takes a new one to finish the cycle (PostBind, or
forget/unreserve/requeue on failure).  So scheduler state is touched by one thread at a
time, and the API calls of many binds overlap each other and the scheduling cycles.

:class:`BindingPool` is the workers (daemon threads): ``submit`` is the Scheduler's
``submit_binding``.  On shutdown :meth:`Turns.close` makes workers still waiting for a turn
give up (:class:`Closed`); :meth:`BindingPool.busy` lets the runner finish the binds in
flight first, for a bounded time.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

WORKERS = 8


class Closed(Exception):
    """The scheduling thread stopped granting turns."""


class _Turn:
    """One turn's grant: a plain lock taken at birth, released once by whoever grants the
    turn.  A bare lock rather than :class:`threading.Event`: an Event builds a Condition (a
    Python object, a waiter lock per wait) and a turn is asked for twice per bind, thousands
    of times a second under load; a lock's acquire and release run in C."""

    __slots__ = ("granted",)

    def __init__(self) -> None:
        self.granted = threading.Lock()
        self.granted.acquire()


class Turns:
    """Exclusive use of the scheduler, handed between the scheduling thread and workers."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._asked: queue.SimpleQueue[_Turn] = queue.SimpleQueue()
        self._local = threading.local()
        self._back = threading.Lock()
        """Held while the scheduling thread is parked; released when a chain of turns ends."""
        self._back.acquire()
        self._granted = 0
        """Turns granted in the current :meth:`serve` (only the holder of the scheduler
        counts)."""
        self.closed = False

    # ------------------------------------------------------------------ workers
    def acquire(self) -> None:
        """Block until the scheduling thread is parked for this worker."""
        turn = _Turn()
        self._asked.put(turn)
        self._wake()
        while not turn.granted.acquire(timeout=0.1):
            if self.closed:
                raise Closed("the scheduling loop stopped")
        self._local.turn = turn

    def release(self) -> None:
        """Give the scheduler back to the scheduling thread."""
        turn: _Turn | None = getattr(self._local, "turn", None)
        self._local.turn = None
        if turn is not None:
            self._pass()

    def _pass(self) -> None:
        """End the caller's turn: hand the scheduler straight to the next worker that asked
        for one, else back to the parked scheduling thread.  So a chain of turns wakes the
        scheduling thread once, at its end, instead of between every two of them."""
        try:
            turn = self._asked.get_nowait()
        except queue.Empty:
            self._back.release()
            return
        self._granted += 1
        turn.granted.release()

    def holding(self) -> bool:
        """Whether the calling thread is a worker holding a turn."""
        return getattr(self._local, "turn", None) is not None

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """Around blocking I/O inside a turn: let the scheduling thread run meanwhile.  On
        the scheduling thread itself (an inline binding cycle) it does nothing."""
        if not self.holding():
            yield
            return
        self.release()
        try:
            yield
        finally:
            self.acquire()

    # ------------------------------------------------------------------ scheduling thread
    def serve(self) -> int:
        """Grant every turn asked for, one after the other (the workers pass the scheduler
        on among themselves, :meth:`_pass`); how many were granted."""
        try:
            turn = self._asked.get_nowait()
        except queue.Empty:
            return 0
        self._granted = 1
        turn.granted.release()
        self._back.acquire()
        return self._granted

    def close(self) -> None:
        """Grant no more turns: waiting workers raise :class:`Closed`."""
        self.closed = True


class BindingPool:
    """Daemon workers running binding cycles, each inside a turn."""

    def __init__(self, turns: Turns, workers: int = WORKERS) -> None:
        self.turns = turns
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._busy = 0
        self.ran = 0
        """Binding cycles run (live mode's lean binds do not come here, see
        :attr:`kubesched.scheduler.commit.Commit.bind_later`)."""
        self._threads = [
            threading.Thread(target=self._work, name=f"kubesched-bind-{i}", daemon=True)
            for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[[], None]) -> None:
        """Run a binding cycle on a worker (the Scheduler's ``submit_binding``)."""
        with self._lock:
            self._busy += 1
        self._jobs.put(fn)

    def busy(self) -> int:
        """Binding cycles submitted and not finished."""
        return self._busy

    def _work(self) -> None:
        while True:
            fn = self._jobs.get()
            try:
                self.turns.acquire()
                try:
                    fn()
                finally:
                    self.turns.release()
            except Closed:
                log.warning("a binding cycle was abandoned at shutdown")
            except Exception:
                log.exception("binding cycle failed")
            finally:
                with self._lock:
                    self._busy -= 1
                    self.ran += 1
