"""Running a scheduler under test: :func:`new_scheduler` builds one on a fake API server and a
virtual clock, :func:`drain` runs scheduling cycles until none is ready.

A test adds nodes and Pods to a scheduler (``on_node_add``, ``on_pod_add``), drains it, then
asserts on what the :class:`~kubesched.testing.fakeapi.FakeApi` recorded.  Any scheduler with
``schedule_one`` drains: the serial one and the shared-pool one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kubesched.config.load import load_config
from kubesched.framework.interface import PluginFactory
from kubesched.plugins.registry import in_tree_registry, known_plugin_names
from kubesched.scheduler import Scheduler, SchedulerOptions
from kubesched.testing.clock import VirtualClock
from kubesched.testing.fakeapi import FakeApi


def new_scheduler(
    config: dict[str, Any] | None = None, registry: Mapping[str, PluginFactory] | None = None
) -> tuple[Scheduler, FakeApi, VirtualClock]:
    """A serial scheduler for the KubeSchedulerConfiguration ``config`` (None: the default
    one) with the in-tree plugins plus ``registry`` (your plugins by name), binding through a
    new :class:`FakeApi` on a new :class:`VirtualClock` at 0; the three of them."""
    reg = in_tree_registry()
    reg.update(registry or {})
    cfg = load_config(config, known_plugins=known_plugin_names(reg))
    fake, clock = FakeApi(), VirtualClock()
    options = SchedulerOptions(registry=reg)
    return Scheduler(cfg, clock=clock, api_client=fake, options=options), fake, clock


class SchedulesOne(Protocol):
    """A scheduler that runs one scheduling cycle at a time."""

    def schedule_one(self) -> bool:
        """Schedule the next ready Pod; False when none was ready."""
        ...


def drain(scheduler: SchedulesOne) -> int:
    """Run scheduling cycles until no Pod is ready (Pods in backoff wait for the clock); how
    many cycles ran."""
    n = 0
    while scheduler.schedule_one():
        n += 1
    return n
