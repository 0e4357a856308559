"""The state the scheduler's informer handlers and search share, declared once.

:class:`kubesched.scheduler.Scheduler` owns its commit step, its Pods held at Permit and
its failure handling as part objects; its informer handlers and its search are still
modules mixed into it, and this base names the attributes they use so each module
type-checks on its own.  ``Scheduler.__init__`` sets them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from kubesched.api import objects
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.batch import BatchCache
from kubesched.framework.extenders import Extenders
from kubesched.framework.interface import ApiClient, Handle
from kubesched.framework.runtime import Framework
from kubesched.framework.verdicts import StaticFailures
from kubesched.metrics import SchedulerMetrics
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.commit import Commit
from kubesched.scheduler.failures import Failures
from kubesched.state.cache import ClusterState


class SchedulerBase:
    """Attributes and cross-part methods of the scheduler (see the module docstring)."""

    config: KubeSchedulerConfiguration
    clock: Callable[[], float]
    api: ApiClient | None
    cluster: ClusterState
    metrics: SchedulerMetrics
    rng: np.random.Generator
    handle: Handle
    extenders: Extenders | None
    profiles: dict[str, Framework]
    queue: SchedulingQueue
    batch: BatchCache
    static_failures: StaticFailures
    next_start_node_index: int
    last_search_nodes: int
    pod_attempts: Counter[str]
    unreadable: dict[str, str]
    committer: Commit
    failing: Failures
    _sampled: dict[str, Framework]
    _event_timer: Callable[[float, str], None]

    def responsible_for(self, pod: objects.Pod) -> bool:
        raise NotImplementedError
