"""A shard's process: building a shard and answering the coordinator's messages.

:func:`serve` is what :class:`~kubesched.parallel.transport.ProcessShard` runs in the shard
process; :func:`make_shard` builds a :class:`~kubesched.parallel.shard.ShardScheduler` from
a configuration object (fork) or its v1 mapping (spawn).

The shard reads its connection itself, between messages: the socket buffers
(:func:`~kubesched.parallel.transport.pipe`) hold the next message while it works, so the
coordinator does not wait, and no reader thread competes with the scheduling thread for the
GIL.  (A reply is a few kilobytes, far below the buffer, so neither side can block the
other for good.)

The process tunes Python's garbage collector for a replica, whose objects are nearly all
long-lived: what exists once the shard is built, and again after any message that carried a
snapshot or many commit-stream entries, is frozen (``gc.freeze()``, as the benchmark
runner does before measuring), and the young-generation threshold is raised
(:data:`GC_THRESHOLDS`).  A message with ``reset`` (auto routing woke dormant shards)
replaces the shard by a fresh one before it is applied.
"""

from __future__ import annotations

import gc
import os
import pickle
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

from kubesched.config.load import load_config
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.parallel import protocol as p
from kubesched.parallel.shard import ShardScheduler
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import SchedulerOptions

FREEZE_AFTER = 1000
"""A message with this many commit-stream entries (a snapshot, nodes added in bulk) is
followed by ``gc.freeze()`` in the shard process, as the benchmark runner does before
measuring: the replica's nodes and Pods are long-lived, and the collector need not walk
them again and again."""
GC_THRESHOLDS = (10_000, 20, 100)
"""The collector's thresholds in a shard process (Python's are 700, 10, 10): a shard
allocates a few objects per Pod of every commit, nearly all long-lived (the replica), so
frequent young collections only walk them again; measured ~5 % of a shard's CPU.  The
benchmark runner's measured phases use them too."""


def make_shard(
    config: KubeSchedulerConfiguration | Mapping[str, Any] | None,
    index: int,
    options: SchedulerOptions,
) -> ShardScheduler:
    """A shard from a configuration object or its v1 mapping (what a spawned process gets;
    the mapping is loaded under ``options.feature_gates``, the Kubernetes version the v1
    mapping cannot carry)."""
    cfg = (
        config
        if isinstance(config, KubeSchedulerConfiguration)
        else load_config(config, known_plugins=known_plugin_names(), gates=options.feature_gates)
    )
    return ShardScheduler(cfg, options, index=index)


def serve(
    conn: Connection,
    config: KubeSchedulerConfiguration | Mapping[str, Any] | None,
    index: int,
    options: SchedulerOptions,
) -> None:
    """Process entry point: answer each :class:`~protocol.ToShard` until told to stop."""
    shard = make_shard(config, index, options)
    gc.collect()
    gc.freeze()  # the configuration and plugins stay out of the collector's way
    gc.set_threshold(*GC_THRESHOLDS)
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        msg: p.ToShard = pickle.loads(data)
        if msg.crash:
            os._exit(3)  # an injected crash: no answer, no cleanup
        if msg.stop:
            return
        if msg.reset:  # woken from dormancy: the old replica goes (it may be frozen)
            shard = make_shard(config, index, options)
            gc.unfreeze()
        reply = shard.process(msg)
        conn.send_bytes(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))
        if msg.reset or shard.applied >= FREEZE_AFTER:  # a snapshot: long-lived objects
            gc.collect()
            gc.freeze()
