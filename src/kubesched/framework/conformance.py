"""A conformance suite any plugin can be run through, in-tree or out-of-tree.

``check_plugin(factory)`` builds the plugin against a small cluster (or yours) and returns a
list of problems (empty: conformant); ``assert_conformant`` raises ``AssertionError`` listing
them.  What it checks, per Pod:

- the plugin has a non-empty ``name``; ``pre_filter`` returns ``(PreFilterResult | None,
  Status)``; ``pre_enqueue`` / ``pre_score`` return a Status;
- **verdict shape**: ``filter`` returns a :class:`Verdict` with int8 ``codes`` of shape
  ``(n,)`` for ``n`` rows (also ``n = 0``), every non-zero code in ``table`` with a
  non-success status; a node's verdict does not depend on which other rows were asked
  (upstream runs Filter per node): the verdicts for each half of the rows equal the halves
  of the verdict for all;
- **score shape**: ``score`` returns int64 of shape ``(n,)``; after ``normalize_score``
  (or raw, without it) every score is within 0..100;
- **no input mutation**: the Pod, the ``rows`` array (passed read-only) and the node table
  columns are unchanged by every call;
- **reserve / unreserve symmetry**: ``reserve`` then ``unreserve`` on a node leaves the
  plugin's own state (its attributes, compared by value) and the cluster as they were;
- **queueing hints**: ``events_to_register`` returns ``ClusterEventWithHint`` values whose
  hints are None or callable; **result reuse**: ``sign`` returns something hashable (or
  None) and equal Pods get equal signatures;
- **capabilities** (:mod:`kubesched.framework.contract`): ``row_local`` / ``node_only``
  answers do not move when a Pod is placed on another node / on any node;
  ``static_rejections`` marks only nodes ``filter`` rejects; ``candidate_rows`` leaves out
  only nodes ``filter`` rejects; ``refresh_filter`` answering True on an unchanged cluster
  keeps ``filter``'s verdicts; ``filter_one`` / ``score_one`` agree with ``filter`` /
  ``score``; a declared ``locality`` is a ``Locality``.

Use it in a plugin package's tests (``examples/kubesched-example-plugin`` does).
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.framework import contract as c
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    Plugin,
    PluginFactory,
    PreFilterResult,
    Status,
    Verdict,
)
from kubesched.state.cache import ClusterState

GIB = 2**30
_STATE_SKIP = (Handle, ClusterState)
_OBJECT_EQ: Any = object.__eq__


_DECLARED = ("InPlacePodLevelResourcesVerticalScaling", "RestartAllContainersOnContainerExits")
"""Node-declared features of the default cluster (``status.declaredFeatures``)."""


def default_cluster() -> ClusterState:
    """Six nodes in two zones (one tainted, one unschedulable, one with GPUs, two declaring
    node features), two running Pods."""
    cluster = ClusterState()
    for i in range(6):
        alloc = {api.CPU: 4000, api.MEMORY: 16 * GIB, api.PODS: 110}
        if i == 5:
            alloc["nvidia.com/gpu"] = 8
        labels = {"kubernetes.io/hostname": f"node-{i}", "topology.kubernetes.io/zone": f"z{i % 2}"}
        taints = (api.Taint("dedicated", "infra"),) if i == 3 else ()
        node = api.Node(f"node-{i}", labels, allocatable=alloc, taints=taints)
        node.unschedulable = i == 4
        if i in (1, 2):
            node.declared_features = _DECLARED[:i]
        cluster.add_node(node)
    for i, name in enumerate(("node-0", "node-1")):
        req = {api.CPU: 1000 * (i + 1), api.MEMORY: 2 * GIB}
        running = api.Pod(f"running-{i}", labels={"app": "db"}, requests=req)
        running.nonzero_requests = dict(req)
        running.node_name = name
        cluster.add_pod(running)
    return cluster


def default_pods() -> list[api.Pod]:
    """A plain Pod, a big one, one with a node selector, one tolerating the taint, a GPU one,
    one needing a node-declared feature."""

    def pod(name: str, cpu: int, mem: int, **kw: Any) -> api.Pod:
        req = {api.CPU: cpu, api.MEMORY: mem}
        p = api.Pod(name, labels={"app": "web"}, requests=req, nonzero_requests=dict(req), **kw)
        return p

    gpu = pod("gpu", 500, GIB)
    gpu.requests["nvidia.com/gpu"] = 2
    return [
        pod("plain", 100, GIB),
        pod("big", 3500, 12 * GIB),
        pod("selector", 100, GIB, node_selector={"topology.kubernetes.io/zone": "z1"}),
        pod("tolerant", 100, GIB, tolerations=(api.Toleration("dedicated", "Equal", "infra"),)),
        gpu,
        pod("restart-all", 100, GIB, required_features=_DECLARED[1:]),
    ]


def _columns(cluster: ClusterState) -> list[Any]:
    t = cluster.nodes
    cols = [t.allocatable, t.requested, t.nonzero_requested, t.pod_count, t.unschedulable]
    return [c.copy() for c in cols] + [sorted(cluster.pods)]


def _attrs(obj: Any) -> dict[str, Any]:
    names = list(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        names += [s for s in getattr(cls, "__slots__", ()) if s not in names]
    return {n: getattr(obj, n) for n in names if hasattr(obj, n)}


def _same(a: Any, b: Any, depth: int = 0) -> bool:
    """Equality by value: arrays element-wise, containers item by item, plain objects
    (identity ``==``) attribute by attribute."""
    if depth > 8 or (callable(a) and callable(b)):
        return True  # deep enough, or functions (not state)
    d = depth + 1
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y, d) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], d) for k in a)
    if type(a) is type(b) and type(a).__eq__ is _OBJECT_EQ:
        x, y = _attrs(a), _attrs(b)
        return x.keys() == y.keys() and all(_same(x[k], y[k], d) for k in x)
    try:
        return bool(a == b)
    except Exception:
        return True  # not comparable by value: not part of the check


def _plugin_state(plugin: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n, v in _attrs(plugin).items():
        if callable(v) or isinstance(v, _STATE_SKIP):
            continue
        try:
            out[n] = copy.deepcopy(v)
        except Exception:
            continue  # not copyable (locks, handles): not part of the check
    return out


def _read_only(rows: IntArray) -> IntArray:
    r = rows.copy()
    r.setflags(write=False)
    return r


def _check_filter(p: Any, state: CycleState, pod: api.Pod, cl: ClusterState) -> list[str]:
    rows = _read_only(cl.nodes.order())
    out: list[str] = []
    v = p.filter(state, pod, cl, rows)
    if not isinstance(v, Verdict):
        return [f"filter returned {type(v).__name__}, not Verdict"]
    codes = np.asarray(v.codes)
    if codes.dtype != np.int8 or codes.shape != rows.shape:
        out.append(f"filter codes are {codes.dtype}{codes.shape}, want int8{rows.shape}")
        return out
    for k in np.unique(codes[codes != 0]).tolist():
        st = v.table.get(k)
        if not isinstance(st, Status) or st.code == Code.SUCCESS:
            out.append(f"filter code {k} has no non-success status in the table")
    half = rows.size // 2
    parts = [p.filter(state, pod, cl, _read_only(r)).codes for r in (rows[:half], rows[half:])]
    if not np.array_equal(np.concatenate(parts) != 0, codes != 0):
        out.append("filter verdict of a node depends on the other rows asked")
    empty = p.filter(state, pod, cl, _read_only(rows[:0]))
    if np.asarray(empty.codes).shape != (0,):
        out.append("filter over no rows must return shape (0,)")
    if isinstance(p, c.FilterOne):
        ones = [p.filter_one(state, pod, cl, r) for r in rows.tolist()]
        if any(
            o not in (True, None) or (o and c) for o, c in zip(ones, codes.tolist(), strict=True)
        ):
            out.append("filter_one must answer True (the node passes) or None")
    return out


def _check_filter_capabilities(
    p: Any, state: CycleState, pod: api.Pod, cl: ClusterState
) -> list[str]:
    """The invariants of :class:`~.contract.StaticRejections`, :class:`~.contract.CandidateRows`
    and :class:`~.contract.RefreshingFilter` against the plugin's own ``filter``."""
    rows = _read_only(cl.nodes.order())
    passes = np.asarray(p.filter(state, pod, cl, rows).codes) == 0
    out: list[str] = []
    if isinstance(p, c.StaticRejections):
        static = np.asarray(p.static_rejections(state, pod, cl, rows))
        if static.dtype != np.bool_ or static.shape != rows.shape:
            out.append(f"static_rejections is {static.dtype}{static.shape}, want bool{rows.shape}")
        elif bool(np.any(static & passes)):
            out.append("static_rejections marks a node that filter passes")
    if isinstance(p, c.CandidateRows):
        cand = p.candidate_rows(state, pod, cl)
        if cand is not None:
            cand = np.asarray(cand)
            if cand.dtype != np.int64 or bool(np.any(np.diff(cand) < 0)):
                out.append("candidate_rows must be int64 rows in ascending order")
            elif bool(np.any(passes & ~np.isin(rows, cand))):
                out.append("candidate_rows leaves out a node that filter passes")
    if isinstance(p, c.RefreshingFilter):
        again = state.clone()
        ok = p.refresh_filter(again, pod, cl)
        if not isinstance(ok, bool):
            out.append("refresh_filter must return a bool")
        elif ok and not np.array_equal(_codes(p, again, pod, cl, rows) == 0, passes):
            out.append("refresh_filter answered True on an unchanged cluster, but filter moved")
    return out


def _codes(p: Any, state: CycleState, pod: api.Pod, cl: ClusterState, rows: IntArray) -> Any:
    """The int8 codes of ``p.filter`` over ``rows`` (shape ``(n,)``)."""
    return np.asarray(p.filter(state, pod, cl, rows).codes)


def _check_score(p: Any, state: CycleState, pod: api.Pod, cl: ClusterState) -> list[str]:
    rows = _read_only(cl.nodes.order())
    if isinstance(p, c.PreScorePlugin):
        s = p.pre_score(state, pod, cl, rows)
        if not isinstance(s, Status):
            return [f"pre_score returned {type(s).__name__}, not Status"]
        if s.code == Code.SKIP or not s.is_success():
            return []
    scores = p.score(state, pod, cl, rows)
    if not isinstance(scores, np.ndarray) or scores.dtype != np.int64:
        return [f"score returned {getattr(scores, 'dtype', type(scores))}, want int64 array"]
    if scores.shape != rows.shape:
        return [f"score shape {scores.shape}, want {rows.shape}"]
    if isinstance(p, c.ScoreOne):
        ones = [p.score_one(state, pod, cl, r) for r in rows.tolist()]
        if any(o is not None and o != sc for o, sc in zip(ones, scores.tolist(), strict=True)):
            return ["score_one must answer score's raw score of the node (or None)"]
    scores = scores.copy()
    if isinstance(p, c.ScoreExtensions):
        p.normalize_score(state, pod, scores)
    if scores.size and (scores.min() < 0 or scores.max() > MAX_NODE_SCORE):
        return [f"scores {scores.tolist()} outside 0..{MAX_NODE_SCORE}"]
    return []


def _check_pod(p: Any, pod: api.Pod, cl: ClusterState) -> list[str]:
    out: list[str] = []
    state = CycleState()
    if isinstance(p, c.PreEnqueuePlugin) and not isinstance(p.pre_enqueue(pod), Status):
        out.append("pre_enqueue must return a Status")
    filtering = isinstance(p, c.FilterPlugin)
    if isinstance(p, c.PreFilterPlugin):
        res = p.pre_filter(state, pod, cl)
        if not (isinstance(res, tuple) and len(res) == 2 and isinstance(res[1], Status)):
            return [*out, "pre_filter must return (PreFilterResult | None, Status)"]
        if res[0] is not None and not isinstance(res[0], PreFilterResult):
            out.append("pre_filter result must be a PreFilterResult or None")
        filtering = filtering and res[1].is_success()
    if filtering:
        out += _check_filter(p, state, pod, cl)
        out += _check_filter_capabilities(p, state, pod, cl)
    if isinstance(p, c.ScorePlugin):
        out += _check_score(p, state, pod, cl)
    if isinstance(p, c.ReservePlugin):
        out += _check_reserve(p, state, pod, cl)
    if c.is_row_local(p):
        out += _check_row_local(p, pod, cl)
    if c.is_node_only(p):
        out += _check_node_only(p, pod, cl)
    return out


def _answers(p: Any, pod: api.Pod, cl: ClusterState, rows: IntArray) -> list[Any]:
    """PreFilter's status, Filter codes, PreScore's status and raw scores over ``rows``."""
    state = CycleState()
    out: list[Any] = []
    if isinstance(p, c.PreFilterPlugin):
        out.append(p.pre_filter(state, pod, cl)[1].code)
    if isinstance(p, c.FilterPlugin):
        out.append(np.asarray(p.filter(state, pod, cl, rows).codes).tolist())
    if isinstance(p, c.PreScorePlugin):
        out.append(p.pre_score(state, pod, cl, rows).code)
    if isinstance(p, c.ScorePlugin) and out[-1:] != [Code.SKIP]:
        out.append(np.asarray(p.score(state, pod, cl, rows)).tolist())
    return out


def _check_row_local(p: Any, pod: api.Pod, cl: ClusterState) -> list[str]:
    """``row_local`` promises answers for a node that a Pod placed on another node cannot
    move (result reuse relies on it); the probe is a labelled Pod with a host port."""
    rows = _read_only(cl.nodes.order())
    if rows.size < 2:
        return []
    req = {api.CPU: 500, api.MEMORY: GIB}
    probe = api.Pod(
        "conformance-probe",
        labels=dict(pod.labels),
        requests=req,
        nonzero_requests=dict(req),
        host_ports=(api.HostPort(8080),),
        node_name=cl.nodes.names[int(rows[-1])],
    )
    before = _answers(p, pod, cl, rows[:-1])
    cl.add_pod(probe)
    try:
        after = _answers(p, pod, cl, rows[:-1])
    finally:
        cl.remove_pod(probe.key)
    if before == after:
        return []
    return ["row_local, but its answers for a node moved when a Pod was placed on another"]


def _check_node_only(p: Any, pod: api.Pod, cl: ClusterState) -> list[str]:
    """``node_only`` promises answers that no placed Pod can move, on its node or another
    (result reuse and kept static failures rely on it); the probe is as for ``row_local``."""
    rows = _read_only(cl.nodes.order())
    if rows.size == 0:
        return []
    req = {api.CPU: 500, api.MEMORY: GIB}
    probe = api.Pod(
        "conformance-probe",
        labels=dict(pod.labels),
        requests=req,
        nonzero_requests=dict(req),
        host_ports=(api.HostPort(8080),),
        node_name=cl.nodes.names[int(rows[-1])],
    )
    before = _answers(p, pod, cl, rows)
    cl.add_pod(probe)
    try:
        after = _answers(p, pod, cl, rows)
    finally:
        cl.remove_pod(probe.key)
    if before == after:
        return []
    return ["node_only, but its answers for a node moved when a Pod was placed on it"]


def _check_declarations(p: Any) -> list[str]:
    """A declared ``locality`` is a :class:`~.contract.Locality`."""
    if isinstance(p, c.Located) and not isinstance(p.locality, c.Locality):
        return [f"locality {p.locality!r} is not a Locality"]
    return []


def _check_reserve(p: Any, state: CycleState, pod: api.Pod, cl: ClusterState) -> list[str]:
    node = cl.nodes.names[int(cl.nodes.order()[0])]
    before, cols = _plugin_state(p), _columns(cl)
    status = p.reserve(state, pod, node)
    if not isinstance(status, Status):
        return ["reserve must return a Status"]
    if isinstance(p, c.UnreservePlugin):
        p.unreserve(state, pod, node)
    after = _plugin_state(p)
    changed = sorted(k for k in before if not _same(before[k], after.get(k)))
    out = [f"unreserve does not undo reserve (attribute {k!r})" for k in changed]
    if not all(_same(a, b) for a, b in zip(cols, _columns(cl), strict=True)):
        out.append("reserve/unreserve changed the cluster")
    return out


def _check_hints_and_sign(p: Any, pods: Sequence[api.Pod]) -> list[str]:
    out: list[str] = []
    if isinstance(p, c.EnqueueExtensions):
        for ev in p.events_to_register():
            if not isinstance(ev, ClusterEventWithHint) or not (
                ev.hint is None or callable(ev.hint)
            ):
                out.append(f"events_to_register item {ev!r} is not a ClusterEventWithHint")
    if isinstance(p, c.Signer):
        for pod in pods:
            a, b = p.sign(pod), p.sign(copy.deepcopy(pod))
            if a is not None and not isinstance(a, Hashable):
                out.append(f"sign({pod.name}) is not hashable")
            elif a != b:
                out.append(f"sign({pod.name}) differs for an equal Pod")
    return out


def check_plugin(
    factory: PluginFactory,
    args: object | None = None,
    *,
    cluster: ClusterState | None = None,
    pods: Iterable[api.Pod] | None = None,
    handle: Handle | None = None,
) -> list[str]:
    """Problems found running the plugin built by ``factory(args, handle)`` over ``pods``
    on ``cluster`` (defaults: :func:`default_cluster`, :func:`default_pods`)."""
    cl = cluster if cluster is not None else default_cluster()
    pod_list = list(pods) if pods is not None else default_pods()
    h = handle or Handle(cl, clock=lambda: 0.0, rng=np.random.default_rng(0))
    plugin: Any = factory(args, h)
    name = plugin.name if isinstance(plugin, Plugin) else None
    if not isinstance(name, str) or not name:
        return ["plugin has no name"]
    problems: list[str] = []
    for pod in pod_list:
        pod_before, cols = copy.deepcopy(pod), _columns(cl)
        try:
            found = _check_pod(plugin, pod, cl)
        except Exception as e:  # a fault is a finding, not a crash of the suite
            found = [f"raised {type(e).__name__}: {e}"]
        if pod != pod_before:
            found.append("mutated the Pod")
        if not all(_same(a, b) for a, b in zip(cols, _columns(cl), strict=True)):
            found.append("mutated the cluster")
        problems += [f"{name} [{pod.name}]: {f}" for f in found]
    problems += [f"{name}: {f}" for f in _check_hints_and_sign(plugin, pod_list)]
    problems += [f"{name}: {f}" for f in _check_declarations(plugin)]
    return problems


def assert_conformant(factory: PluginFactory, args: object | None = None, **kw: Any) -> None:
    """:func:`check_plugin`, raising ``AssertionError`` with every problem found."""
    problems = check_plugin(factory, args, **kw)
    if problems:
        raise AssertionError("plugin is not conformant:\n  " + "\n  ".join(problems))
