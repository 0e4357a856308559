"""One fake API server for tests: what a scheduler or a plugin asks of the API server, in memory.

The scheduler and its plugins reach the API server through a small client
(:class:`kubesched.framework.interface.ApiClient`: ``bind`` and ``delete_pod``, plus the
optional ``pod_scheduling_failed`` the scheduler reports unschedulable Pods to).  A
:class:`FakeApi` answers all three and records what was asked, so a test can assert on the
binds, the preemption victims and the failure messages; it can also be told to refuse binds.
Subclass it to change one answer (a graceful deletion, a conflict of a live API server).

This is not a wire-level server: kubesched's live mode is tested against an HTTP fake that
speaks kube-apiserver's protocol (``tests/live/fakeapi.py``), and the simulator has its own
in-memory API server with watches (:mod:`kubesched.sim.apiserver`).
"""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.state.cache import ClusterState


class FakeApi:
    """Records binds, deletions and scheduling failures; can be told to fail binds.

    ``binds`` maps each bound Pod's key to its node (the last bind wins) and ``bound`` lists
    ``(pod key, node)`` in order; ``deleted`` lists deleted Pods' keys in order; ``failures``
    maps a Pod's key to its last ``(reason, message)`` and ``failed`` lists every ``(pod key,
    reason, message)`` in order.  With ``fail_binds`` set, or for a Pod whose key is in
    ``refuse``, ``bind`` raises :meth:`bind_failure` instead of recording.  Given a
    ``cluster``, a deleted Pod also leaves it at once (as the scheduler's cache hears of a
    deletion without grace period).
    """

    def __init__(
        self,
        cluster: ClusterState | None = None,
        *,
        fail_binds: bool = False,
        bind_error: str = "apiserver unavailable",
    ) -> None:
        self.cluster = cluster
        self.fail_binds = fail_binds
        self.bind_error = bind_error
        self.refuse: set[str] = set()
        self.binds: dict[str, str] = {}
        self.bound: list[tuple[str, str]] = []
        self.deleted: list[str] = []
        self.failures: dict[str, tuple[str, str]] = {}
        self.failed: list[tuple[str, str, str]] = []

    def bind(self, pod: api.Pod, node_name: str) -> None:
        """Bind ``pod`` to ``node_name``, or raise when told to fail."""
        if self.fail_binds or pod.key in self.refuse:
            raise self.bind_failure(pod, node_name)
        self.binds[pod.key] = node_name
        self.bound.append((pod.key, node_name))

    def bind_failure(self, pod: api.Pod, node_name: str) -> Exception:
        """The error a refused bind raises (a ``RuntimeError`` saying ``bind_error``)."""
        del pod, node_name
        return RuntimeError(self.bind_error)

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        """Delete ``pod`` (a preemption victim): record it, and drop it from ``cluster``."""
        del reason
        self.deleted.append(pod.key)
        if self.cluster is not None:
            self.cluster.remove_pod(pod.key)

    def pod_scheduling_failed(self, pod: api.Pod, reason: str, message: str) -> None:
        """The scheduler's report of an unschedulable Pod (upstream's PodScheduled condition)."""
        self.failures[pod.key] = (reason, message)
        self.failed.append((pod.key, reason, message))
