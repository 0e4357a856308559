"""How the coordinator talks to a shard: a separate OS process, or in-process for tests.

Both kinds take a pickled :class:`~kubesched.parallel.protocol.ToShard` and give back the
:class:`~kubesched.parallel.protocol.FromShard` answers in order; both raise
:class:`ShardCrashed` when the shard is gone (its answers to messages already sent are lost),
and :meth:`restart` brings up a fresh shard with an empty replica.

- :class:`ProcessShard`: one ``multiprocessing`` process per shard over a ``Pipe``
  (``fork`` where the platform has it, so a shard starts in milliseconds and inherits the
  configuration object and plugin registry; ``spawn`` gets the configuration as its v1
  mapping and the in-tree registry).
- :class:`InlineShard`: the same :class:`~kubesched.parallel.shard.ShardScheduler` run
  synchronously when the message is sent, bytes in and bytes out; deterministic and fast
  to start, for property tests with many interleavings.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import pickle
import socket
import sys
from collections import deque
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Any, Protocol

from kubesched.config.encode import config_to_dict
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.parallel import protocol as p
from kubesched.parallel import shard as sh
from kubesched.parallel import shardmain
from kubesched.scheduler import SchedulerOptions

PROCESS = "process"
INLINE = "inline"
JOIN_SECONDS = 5.0
SOCKET_BUFFER = 4 << 20
"""Bytes asked for each direction's socket buffer (the kernel caps it at ``wmem_max``)."""


def pipe() -> tuple[Connection, Connection]:
    """A duplex connection pair (as ``multiprocessing.Pipe``) whose socket buffers hold a
    whole step's message (:data:`SOCKET_BUFFER`, up to the system's ``wmem_max``), so the
    coordinator's send returns at once while the shard is still busy with the previous one
    (the default 208 KiB made it wait for the shard's reader to get the GIL)."""
    if not hasattr(socket, "socketpair") or sys.platform == "win32":
        here, there = mp.Pipe(duplex=True)
        return here, there
    a, b = socket.socketpair()
    for sock in (a, b):
        for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, opt, SOCKET_BUFFER)
    return Connection(a.detach()), Connection(b.detach())


class ShardCrashed(Exception):
    """The shard process exited or its pipe broke."""


class ShardHandle(Protocol):
    """What the coordinator needs of a shard."""

    index: int

    def send(self, msg: p.ToShard) -> None: ...
    def recv(self) -> p.FromShard: ...
    def ready(self, timeout: float = 0.0) -> bool: ...
    def restart(self) -> None: ...
    def kill(self) -> None: ...
    def close(self) -> None: ...


class ProcessShard:
    """Shard ``index`` in its own process."""

    def __init__(
        self,
        index: int,
        config: KubeSchedulerConfiguration,
        options: SchedulerOptions,
        start_method: str | None = None,
    ) -> None:
        self.index = index
        methods = mp.get_all_start_methods()
        self.method = start_method or ("fork" if "fork" in methods else "spawn")
        self.ctx: Any = mp.get_context(self.method)
        self.config: Any = config if self.method == "fork" else config_to_dict(config)
        self.options = options if self.method == "fork" else replace(options, registry=None)
        self.conn: Connection | None = None
        self.proc: Any = None
        self.restart()

    def restart(self) -> None:
        """Start (or start again) the shard process."""
        self.close()
        here, there = pipe()
        self.proc = self.ctx.Process(
            target=shardmain.serve,
            args=(there, self.config, self.index, self.options),
            name=f"kubesched-shard-{self.index}",
            daemon=True,
        )
        self.proc.start()
        there.close()
        self.conn = here

    def send(self, msg: p.ToShard) -> None:
        """Send one message (raises :class:`ShardCrashed` on a broken pipe)."""
        assert self.conn is not None
        try:
            self.conn.send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
        except (BrokenPipeError, OSError, EOFError) as e:
            raise ShardCrashed(f"shard {self.index}: {e}") from e

    def recv(self) -> p.FromShard:
        """The answer to the oldest message not yet answered."""
        assert self.conn is not None
        try:
            reply: p.FromShard = pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError) as e:
            raise ShardCrashed(f"shard {self.index} exited") from e
        return reply

    def ready(self, timeout: float = 0.0) -> bool:
        """Whether :meth:`recv` would not wait (an answer, or a broken pipe, is there),
        waiting up to ``timeout`` seconds for it."""
        return self.conn is None or self.conn.poll(timeout)

    def kill(self) -> None:
        """Crash the shard now (tests)."""
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
            self.proc.join(JOIN_SECONDS)

    def close(self) -> None:
        """Ask the shard to stop and reap it."""
        if self.conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError, EOFError):
                self.conn.send_bytes(pickle.dumps(p.ToShard(0.0, stop=True)))
            self.conn.close()
            self.conn = None
        if self.proc is not None:
            self.proc.join(JOIN_SECONDS)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join(JOIN_SECONDS)
            self.proc = None


class InlineShard:
    """Shard ``index`` in this process, answering each message as it is sent."""

    def __init__(
        self,
        index: int,
        config: KubeSchedulerConfiguration,
        options: SchedulerOptions,
    ) -> None:
        self.index = index
        self.config = config
        self.options = options
        self.shard: sh.ShardScheduler | None = None
        self.answers: deque[bytes] = deque()
        self.restart()

    def restart(self) -> None:
        """A fresh shard with an empty replica."""
        self.shard = shardmain.make_shard(self.config, self.index, self.options)
        self.answers.clear()

    def send(self, msg: p.ToShard) -> None:
        """Run the shard on the message now (bytes in, bytes out, as over a pipe)."""
        if self.shard is None:
            raise ShardCrashed(f"shard {self.index} is down")
        msg = pickle.loads(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
        if msg.crash:
            self.kill()
            return
        if msg.reset:
            self.shard = shardmain.make_shard(self.config, self.index, self.options)
        reply = self.shard.process(msg)
        self.answers.append(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))

    def recv(self) -> p.FromShard:
        """The answer to the oldest message not yet answered."""
        if self.shard is None or not self.answers:
            raise ShardCrashed(f"shard {self.index} is down")
        reply: p.FromShard = pickle.loads(self.answers.popleft())
        return reply

    def ready(self, timeout: float = 0.0) -> bool:
        """Answers are made when sent: always (a crashed shard raises on :meth:`recv`)."""
        del timeout
        return True

    def kill(self) -> None:
        """Crash the shard: its replica and unsent answers are gone."""
        self.shard = None
        self.answers.clear()

    def close(self) -> None:
        """Nothing to reap."""
        self.shard = None


def start(
    kind: str,
    index: int,
    config: KubeSchedulerConfiguration,
    options: SchedulerOptions,
    start_method: str | None = None,
) -> ShardHandle:
    """Shard ``index`` of ``options.shards``, of ``kind`` (:data:`PROCESS` or
    :data:`INLINE`)."""
    if kind == PROCESS:
        return ProcessShard(index, config, options, start_method)
    if kind == INLINE:
        return InlineShard(index, config, options)
    raise ValueError(f"unknown shard transport {kind!r} (use {PROCESS!r} or {INLINE!r})")
