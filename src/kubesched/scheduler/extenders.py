"""The configured extenders run over a whole cycle's candidate nodes (upstream
``findNodesThatPassExtenders``, the extender part of ``prioritizeNodes`` and
``extendersBinding`` in ``schedule_one.go``).

One HTTP call per extender and verb per scheduling cycle, never one per node: the candidate
rows are sent together (names for ``nodeCacheCapable`` extenders, Node manifests otherwise,
serialised once per Node object and cached).  Semantics, as upstream v1.34:

- **filter** runs after the in-process Filter plugins, extender after extender in order
  (ignorable ones last), each seeing the nodes the previous ones kept, and only for Pods the
  extender is interested in (``managedResources``).  ``FailedNodes`` become Unschedulable,
  ``FailedAndUnresolvableNodes`` UnschedulableAndUnresolvable statuses (the latter wins);
  when an extender removed nodes, ``Extender`` joins the Pod's unschedulable plugins, so any
  cluster event requeues it.  On a transport error, timeout, non-200 answer or ``Error``
  field, an ignorable extender is skipped and a non-ignorable one raises
  :class:`~kubesched.framework.interface.ExtenderError`: the attempt ends as an error.
- **prioritize** calls every interested extender (concurrently when several); each score
  ``s`` adds ``s * weight * (MaxNodeScore / MaxExtenderPriority)`` = ``s * weight * 10`` to a
  node's total.  A failing prioritize gives no score and never fails the attempt, whether
  the extender is ignorable or not (upstream).
- **bind**: the first interested binding extender binds instead of the Bind plugins; if it
  fails, an ignorable one is skipped (the next binder, or the Bind plugins, bind), a
  non-ignorable one fails the binding cycle.

- **preempt** (upstream ``Evaluator.callExtenders``): after DefaultPreemption found its
  candidates, every interested extender with a ``preemptVerb`` is called once, in order, with
  the whole candidate map (node name to victims); its answer replaces the map the next one
  sees, so it may drop nodes or change victims.  An error skips an ignorable extender and
  fails the preemption for a non-ignorable one; a node answered without victims is dropped
  (ignorable) or is the error ``expected at least one victim pod on node "n"``.

Every call is observed through ``observe(extender, verb, seconds, error_reason, ignored)``
(``error_reason`` None, ``timeout`` or ``error``; ``verb`` is ``filter`` / ``prioritize`` /
``bind`` / ``preempt``), which the scheduler points at its metrics.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from kubesched.api import objects as api
from kubesched.config.extenders import Extender
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    Code,
    ExtenderError,
    IntArray,
    Status,
    Victims,
)
from kubesched.scheduler.extender import (
    MAX_EXTENDER_PRIORITY,
    FilterResult,
    HTTPExtender,
    node_manifest,
    pod_manifest,
)
from kubesched.state.nodes import NodeTable

EXTENDER_NAME = "Extender"
"""Upstream ``framework.ExtenderName``: the unschedulable "plugin" of extender rejections."""

SCORE_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY

Observe = Callable[[str, str, float, "str | None", bool], None]
"""``observe(extender, verb, seconds, error_reason, ignored)``."""


@dataclass(slots=True)
class FilterCall:
    """One extender's filter call: the nodes sent and its answer (or the skipped error)."""

    extender: str
    sent: list[str]
    result: FilterResult | None = None
    error: str = ""


@dataclass(slots=True)
class ExtenderFilterOutcome:
    """``feasible``: int64 rows kept by every extender, in input order; ``failed``: int64
    rows an extender rejected with a reason, ``statuses[i]`` the status of ``failed[i]``;
    ``removed``: whether extenders dropped any node; ``calls``: each call, for explain."""

    feasible: IntArray
    failed: IntArray
    statuses: list[Status]
    removed: bool
    calls: list[FilterCall] = field(default_factory=list)


@dataclass(slots=True)
class ExtenderScores:
    """``total``: int64 ``(n,)`` scaled and weighted sum over extenders; ``raw[name]``:
    int64 ``(n,)`` the extender's own 0..10 scores; ``errors[name]``: why one gave none."""

    total: IntArray
    raw: dict[str, IntArray] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


class Extenders:
    """The configured extenders of a scheduler (shared by its profiles, as upstream)."""

    def __init__(self, configs: Sequence[Extender], observe: Observe | None = None) -> None:
        self.extenders = [HTTPExtender(c) for c in configs]
        self._observe = observe
        self._pool: ThreadPoolExecutor | None = None
        self._pod: tuple[api.Pod | None, str] = (None, "")
        self._nodes: dict[str, tuple[api.Node, str]] = {}

    def __len__(self) -> int:
        return len(self.extenders)

    def has_filters(self) -> bool:
        """Whether any extender filters (upstream ``hasExtenderFilters``)."""
        return any(e.is_filter() for e in self.extenders)

    def has_prioritizers(self) -> bool:
        """Whether any extender scores (part of upstream ``hasScoring``)."""
        return any(e.is_prioritizer() for e in self.extenders)

    def interested(self, pod: api.Pod) -> bool:
        """Whether any extender is interested in ``pod`` (result reuse is off then)."""
        return any(e.is_interested(pod) for e in self.extenders)

    # ---------------------------------------------------------------- helpers
    def _call(self, ext: HTTPExtender, verb: str, fn: Callable[[], object]) -> object:
        start = time.perf_counter()
        try:
            out = fn()
        except ExtenderError as e:
            if self._observe is not None:
                ignored = ext.ignorable or verb == "prioritize"
                self._observe(ext.name, verb, time.perf_counter() - start, e.reason, ignored)
            raise
        if self._observe is not None:
            self._observe(ext.name, verb, time.perf_counter() - start, None, False)
        return out

    def _pod_json(self, pod: api.Pod) -> str:
        if self._pod[0] is not pod:
            self._pod = (pod, json.dumps(pod_manifest(pod), separators=(",", ":")))
        return self._pod[1]

    def _node_json(self, table: NodeTable, rows: IntArray) -> list[str]:
        out = []
        for r in rows.tolist():
            node = table.nodes[r]
            assert node is not None
            hit = self._nodes.get(node.name)
            if hit is None or hit[0] is not node:
                hit = (node, json.dumps(node_manifest(node), separators=(",", ":")))
                self._nodes[node.name] = hit
            out.append(hit[1])
        if len(self._nodes) > 2 * len(table) + 64:
            self._nodes.clear()  # nodes went away: drop their cached manifests
        return out

    def _body(self, ext: HTTPExtender, pod: api.Pod, table: NodeTable, rows: IntArray) -> bytes:
        names = [table.names[r] for r in rows.tolist()]
        nodes = [] if ext.config.node_cache_capable else self._node_json(table, rows)
        return ext.args_body(self._pod_json(pod), names, nodes)

    # ---------------------------------------------------------------- filter
    def filter(self, pod: api.Pod, table: NodeTable, rows: IntArray) -> ExtenderFilterOutcome:
        """Run the filter extenders over ``rows`` (int64 ``(n,)``); raises
        :class:`ExtenderError` when a non-ignorable extender fails."""
        feasible = rows
        failed: list[int] = []
        statuses: list[Status] = []
        calls: list[FilterCall] = []
        for ext in self.extenders:
            if feasible.size == 0:
                break
            if not ext.is_filter() or not ext.is_interested(pod):
                continue
            sent = [table.names[r] for r in feasible.tolist()]
            call = FilterCall(ext.name, sent)
            calls.append(call)
            body = self._body(ext, pod, table, feasible)
            try:
                res = self._call(ext, "filter", functools.partial(ext.filter, body, sent))
            except ExtenderError as e:
                if not ext.ignorable:
                    raise
                call.error = str(e)
                continue
            assert isinstance(res, FilterResult)
            call.result = res
            known = set(sent) - set(res.passed)  # a node both passed and failed: passed
            for name, msg in res.unresolvable.items():
                if name in known:
                    failed.append(table.row_of[name])
                    statuses.append(
                        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,), EXTENDER_NAME)
                    )
            for name, msg in res.failed.items():
                if name in known and name not in res.unresolvable:
                    failed.append(table.row_of[name])
                    statuses.append(Status(Code.UNSCHEDULABLE, (msg,), EXTENDER_NAME))
            keep = np.asarray([table.row_of[n] for n in res.passed], dtype=np.int64)
            feasible = feasible[np.isin(feasible, keep)]
        return ExtenderFilterOutcome(
            feasible=feasible,
            failed=np.asarray(failed, dtype=np.int64),
            statuses=statuses,
            removed=feasible.size != rows.size,
            calls=calls,
        )

    # ---------------------------------------------------------------- prioritize
    def prioritize(self, pod: api.Pod, table: NodeTable, rows: IntArray) -> ExtenderScores:
        """Scores of the interested prioritizing extenders for ``rows`` (int64 ``(n,)``)."""
        out = ExtenderScores(np.zeros(rows.size, dtype=np.int64))
        todo = [e for e in self.extenders if e.is_prioritizer() and e.is_interested(pod)]
        if not todo or rows.size == 0:
            return out
        bodies = [self._body(e, pod, table, rows) for e in todo]

        def run(ext: HTTPExtender, body: bytes) -> dict[str, int] | ExtenderError:
            try:
                got = self._call(ext, "prioritize", functools.partial(ext.prioritize, body))
            except ExtenderError as e:
                return e
            assert isinstance(got, dict)
            return got

        if len(todo) == 1:
            answers = [run(todo[0], bodies[0])]
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(len(self.extenders), "kubesched-extender")
            answers = list(self._pool.map(run, todo, bodies))
        position = {table.names[r]: i for i, r in enumerate(rows.tolist())}
        for ext, answer in zip(todo, answers, strict=True):
            if isinstance(answer, ExtenderError):
                out.errors[ext.name] = str(answer)
                continue
            raw = np.zeros(rows.size, dtype=np.int64)
            for host, score in answer.items():
                i = position.get(host)
                if i is not None:
                    raw[i] = score
            out.raw[ext.name] = raw
            out.total += raw * ext.weight * SCORE_SCALE
        return out

    # ---------------------------------------------------------------- bind
    def bind(self, pod: api.Pod, node: str) -> Status | None:
        """Bind through the first interested binding extender; None when none did (the
        Bind plugins bind then)."""
        for ext in self.extenders:
            if not ext.is_binder() or not ext.is_interested(pod):
                continue
            try:
                self._call(ext, "bind", functools.partial(ext.bind, pod, node))
            except ExtenderError as e:
                if ext.ignorable:
                    continue
                return Status(Code.ERROR, (str(e),), EXTENDER_NAME)
            return Status(Code.SUCCESS, (), EXTENDER_NAME)
        return None

    # ---------------------------------------------------------------- preempt
    def has_preemption(self, pod: api.Pod) -> bool:
        """Whether an extender with a preempt verb is interested in ``pod``."""
        return any(e.supports_preemption() and e.is_interested(pod) for e in self.extenders)

    def process_preemption(
        self,
        pod: api.Pod,
        victims: dict[str, Victims],
        pods_on: Callable[[str], Sequence[api.Pod] | None],
    ) -> dict[str, Victims]:
        """Upstream ``callExtenders``: the candidates (node name to victims) the preempting
        extenders keep; ``pods_on(node)`` lists a node's Pods (None: no such node).  Raises
        :class:`ExtenderError` when a non-ignorable extender fails."""
        for ext in self.extenders:
            if not victims:
                break
            if not ext.supports_preemption() or not ext.is_interested(pod):
                continue
            call = functools.partial(ext.process_preemption, self._pod_json(pod), victims, pods_on)
            try:
                got = self._call(ext, "preempt", call)
            except ExtenderError:
                if ext.ignorable:
                    continue
                raise
            assert isinstance(got, dict)
            for node in [n for n, v in got.items() if not v.pods]:
                if not ext.ignorable:
                    msg = f'expected at least one victim pod on node "{node}"'
                    raise ExtenderError(ext.name, ext.config.preempt_verb, msg)
                del got[node]
            victims = got
        return victims

    def close(self) -> None:
        """Close connections and worker threads."""
        for e in self.extenders:
            e.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
