"""Work done beside this process: a forked child on the other core.

A large input's checks (:mod:`kubesched.api.jsonscan`'s scans, a List's strictness check in
:mod:`kubesched.api.listitems`) need the whole text but nothing of what the reader builds
from it, and msgspec's C decoder holds the interpreter's lock while it runs, so a thread
could not run beside it.  A forked child shares the text's pages, works on its own core and
answers with a few bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["SIDE_BYTES", "run"]

SIDE_BYTES = 8 * 2**20
"""Inputs at least this large are checked beside (smaller ones are checked in place: a fork
costs more than their scan)."""


def run(work: Callable[[], bytes], size: int) -> Callable[[], bytes] | None:
    """Run ``work`` in a forked child while this process goes on, when the input's ``size``
    is :data:`SIDE_BYTES` or more and the system forks; None otherwise (do it in place).
    Returns the function that waits for the child and gives its answer (empty if it failed):
    call it once, whatever happened meanwhile, so that no child is left behind.  The child
    writes its answer to a pipe and exits at once (``os._exit``: no exit handlers, no
    buffers flushed twice)."""
    if size < SIDE_BYTES or not hasattr(os, "fork"):
        return None
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, work())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)

    def wait() -> bytes:
        with os.fdopen(read_end, "rb") as pipe:
            answer = pipe.read()
        _, status = os.waitpid(pid, 0)
        return answer if status == 0 else b""

    return wait
