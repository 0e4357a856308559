"""Turns: workers use the scheduler one at a time, never while the scheduling thread does."""

from __future__ import annotations

import threading
import time

import pytest

from kubesched.live.turns import Closed, Turns


def test_turns_asked_meanwhile_are_passed_on_and_never_overlap() -> None:
    turns = Turns(lambda: None)
    inside: list[int] = []
    most = [0]
    started = threading.Barrier(5)

    def worker() -> None:
        started.wait()
        for _ in range(20):
            turns.acquire()
            try:
                inside.append(1)
                most[0] = max(most[0], len(inside))
                time.sleep(0.0005)
                inside.pop()
            finally:
                turns.release()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    started.wait()
    granted = 0
    while any(t.is_alive() for t in threads):
        assert not inside  # the scheduling thread runs only between turns
        granted += turns.serve()
        assert not inside
    assert granted == 80
    assert most[0] == 1


def test_a_worker_waiting_when_turns_close_gives_up() -> None:
    turns = Turns(lambda: None)
    turns.close()
    with pytest.raises(Closed):
        turns.acquire()
