"""A recording plugin that fails on demand, and the pairing checks built on it.

:class:`Recorder` joins Reserve, Permit, PreBind and PostBind and logs every call it gets.
A Pod's ``pair/fail`` label picks the failure it meets (:data:`MODES`), the first time this
plugin instance sees the Pod at that point (so the Pod is scheduled on a later attempt, and
in the sharded scheduler both the shard and the binder meet the failure once); ``pair/at``
limits it to instances of one :attr:`Recorder.role`.  A ``hold`` Pod waits at Permit (ten
minutes) every time, until it is deleted.

:func:`check_reserve_pairing` reads one instance's log: every Reserve is closed by exactly
one Unreserve or by PostBind (the bind succeeded) before the Pod is reserved again, and
nothing is left open (docs/design.md section 7: Reserve and Unreserve are paired on every
failure path).  :func:`check_assume_pairing` checks the other half on a cache: nothing is
left assumed, and the cache counts exactly the Pods the API server has bound, where it
bound them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api import objects as api
from kubesched.framework import interface as fw
from kubesched.state.cache import ClusterState

NAME = "Recorder"
FAIL = "pair/fail"
AT = "pair/at"
MODES = ("reserve", "permit", "timeout", "prebind", "bind", "hold")
"""``reserve``: Reserve fails; ``permit``: Permit rejects; ``timeout``: Permit waits 5 s and
nobody allows it; ``prebind``: PreBind fails; ``bind``: the API server refuses the bind
(:func:`failing_bind`); ``hold``: Permit waits until the Pod is deleted."""
TIMEOUT_SECONDS = 5.0
HOLD_SECONDS = 600.0

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": NAME}]}},
        }
    ],
}
"""The default profile plus the recorder at every point it implements."""


class Recorder:
    """Logs ``(point, pod key)`` for reserve, unreserve, permit, pre_bind and post_bind."""

    name = NAME

    def __init__(self, args: object, handle: fw.Handle) -> None:
        del args
        self.handle = handle
        self.role = "binder"
        """Which scheduler this instance belongs to: ``binder`` (the serial scheduler or
        the parallel coordinator) or ``shard``; tests set it after construction."""
        self.log: list[tuple[str, str]] = []
        self.calls: Counter[tuple[str, str]] = Counter()
        self.failed: Counter[str] = Counter()
        """Failures this instance produced, by mode."""

    def _note(self, point: str, pod: api.Pod) -> int:
        """Log the call; how many times this instance saw ``pod`` at ``point``."""
        self.log.append((point, pod.key))
        self.calls[point, pod.key] += 1
        return self.calls[point, pod.key]

    def _meets(self, mode: str, pod: api.Pod, nth: int) -> bool:
        """Whether ``pod`` meets failure ``mode`` here, on its ``nth`` call at the point."""
        if pod.labels.get(FAIL) != mode or pod.labels.get(AT, self.role) != self.role:
            return False
        if mode != "hold" and nth > 1:
            return False
        self.failed[mode] += 1
        return True

    def reserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> fw.Status:
        if self._meets("reserve", pod, self._note("reserve", pod)):
            return fw.unschedulable("recorder: reserve refused")
        return fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> None:
        self._note("unreserve", pod)

    def permit(self, state: fw.CycleState, pod: api.Pod, node: str) -> tuple[fw.Status, float]:
        nth = self._note("permit", pod)
        if self._meets("permit", pod, nth):
            return fw.unschedulable("recorder: permit rejected"), 0.0
        if self._meets("timeout", pod, nth):
            return fw.Status(fw.Code.WAIT), TIMEOUT_SECONDS
        if self._meets("hold", pod, nth):
            return fw.Status(fw.Code.WAIT), HOLD_SECONDS
        return fw.SUCCESS, 0.0

    def pre_bind(self, state: fw.CycleState, pod: api.Pod, node: str) -> fw.Status:
        if self._meets("prebind", pod, self._note("pre_bind", pod)):
            return fw.error("recorder: pre-bind failed")
        return fw.SUCCESS

    def post_bind(self, state: fw.CycleState, pod: api.Pod, node: str) -> None:
        self._note("post_bind", pod)


def new(args: object, handle: fw.Handle) -> Recorder:
    """Factory."""
    return Recorder(args, handle)


def failing_bind(client: Any, calls: Counter[str]) -> Callable[[api.Pod, str], None]:
    """``client.bind``, refusing the first bind of each ``pair/fail=bind`` Pod (``calls``
    counts the binds asked for, by Pod key)."""
    bind = client.bind

    def wrapped(pod: api.Pod, node_name: str) -> None:
        calls[pod.key] += 1
        if pod.labels.get(FAIL) == "bind" and calls[pod.key] == 1:
            raise RuntimeError("apiserver: bind refused")
        bind(pod, node_name)

    return wrapped


def check_reserve_pairing(rec: Recorder, still_waiting: frozenset[str] = frozenset()) -> None:
    """Every Reserve closed by one Unreserve or PostBind (see the module docstring)."""
    open_: set[str] = set()
    for point, key in rec.log:
        where = f"{rec.role}: {key}"
        if point == "reserve":
            assert key not in open_, f"{where} reserved again without Unreserve or PostBind"
            open_.add(key)
        elif point in ("unreserve", "post_bind"):
            assert key in open_, f"{where}: {point} without a Reserve open"
            open_.discard(key)
        else:
            assert key in open_, f"{where}: {point} outside a reservation"
    left = open_ - still_waiting
    assert not left, f"{rec.role}: reserved and never unreserved nor bound: {sorted(left)}"


def check_assume_pairing(
    cluster: ClusterState, bound: Mapping[str, str], who: str, *, pending_ok: bool = False
) -> None:
    """Nothing left assumed and the cache counts the bound Pods (``bound``: key to node, as
    the API server has them) exactly where they are; ``pending_ok``: a replica may lag."""
    assumed = sorted(k for k, r in cluster.pods.items() if r.assumed)
    assert not assumed, f"{who}: still assumed (assume without forget): {assumed}"
    cached = {k: r.node for k, r in cluster.pods.items()}
    assert cached == dict(bound) or pending_ok, f"{who}: cache {cached} != bound {dict(bound)}"
