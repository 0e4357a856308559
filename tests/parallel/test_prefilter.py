"""The binder's kept PreFilter results (parallel/prefilter.py) against a full recomputation.

Whatever hypothesis draws -- nodes in zones, Pods with and without the spread label or
with anti-affinity to it bound, assumed, forgotten and deleted in any order -- the verdicts
(feasible nodes and each failure's reason) on the kept, incrementally updated state are
those of a fresh PreFilter over the whole cluster; so the binder refuses exactly the
proposals that would violate maxSkew (or existing Pods' anti-affinity) given every commit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.config.load import load_config
from kubesched.framework.interface import CycleState
from kubesched.framework.runtime import Framework
from kubesched.parallel.prefilter import PreFilterCache
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler
from kubesched.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _selector(**labels: str) -> api.LabelSelector:
    return api.LabelSelector(match_labels=tuple(sorted(labels.items())))


def _incoming(name: str, kind: str) -> api.Pod:
    """A Pod the binder checks: spread over zones (maxSkew 1), or a plain one."""
    b = make_pod(name, "ns").req(cpu="100m").labels(app="spread")
    if kind == "spread":
        b.pod.topology_spread_constraints = (
            api.TopologySpreadConstraint(1, ZONE, "DoNotSchedule", _selector(app="spread")),
        )
    return b.obj()


def _existing(name: str, label: str, node: str) -> api.Pod:
    """A Pod placed on ``node``: counted by the spread (``spread``), or not (``other``), or
    with required anti-affinity to the spread Pods in its zone (``anti``)."""
    b = make_pod(name, "ns").req(cpu="100m").labels(app=label)
    if label == "anti":
        b.pod.pod_anti_affinity = api.PodAffinity(
            required=(api.PodAffinityTerm(ZONE, _selector(app="spread")),)
        )
    return b.obj().bound_to(node)


def _verdicts(fwk: Framework, state: CycleState, pod: api.Pod, rows: Any) -> Any:
    out = fwk.run_filter(state, pod, rows)
    reasons = sorted(
        (int(r), out.status_of(i).message()) for i, r in enumerate(out.failed.tolist())
    )
    return sorted(out.feasible.tolist()), reasons


OPS = st.lists(
    st.tuples(
        st.sampled_from(("bind", "assume", "forget", "delete")),
        st.integers(0, 7),  # node
        st.sampled_from(("spread", "anti", "other")),  # the Pod's label
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 8), st.integers(1, 3), st.sampled_from(("spread", "plain")), OPS)
def test_kept_state_gives_the_verdicts_of_a_full_prefilter(
    n_nodes: int, zones: int, kind: str, ops: list[tuple[str, int, str]]
) -> None:
    sched = Scheduler(load_config(None, known_plugins=known_plugin_names()), clock=lambda: 0.0)
    cluster = sched.cluster
    for i in range(n_nodes):
        labels = {HOST: f"n{i}"}
        if i % 4 != 3:  # a node now and then without a zone
            labels[ZONE] = f"z{i % zones}"
        cluster.add_node(make_node(f"n{i}").cap(cpu="64", pods=200).labels(**labels).obj())
    fwk = sched.profiles["default-scheduler"]
    kept = PreFilterCache(cluster)
    kept.pre_filter(fwk, _incoming("first", kind))
    rows = cluster.nodes.order()
    assumed: list[api.Pod] = []
    for i, (op, node, label) in enumerate(ops):
        name = f"n{node % n_nodes}"
        pod = _existing(f"p{i}", label, name)
        if op == "bind":
            cluster.add_pod(pod)
        elif op == "assume":
            cluster.assume_pod(pod, name)
            assumed.append(pod)
        elif op == "forget" and assumed:
            cluster.forget_pod(assumed.pop(node % len(assumed)))
        elif op == "delete" and cluster.pods:
            keys = sorted(cluster.pods)
            gone = keys[node % len(keys)]
            cluster.remove_pod(gone)
            assumed = [a for a in assumed if a.key != gone]
        probe = _incoming(f"probe{i}", kind)
        state, _, status = kept.pre_filter(fwk, probe)
        fresh = CycleState()
        _, fresh_status, _ = fwk.run_pre_filter(fresh, probe)
        assert status.code == fresh_status.code
        assert _verdicts(fwk, state, probe, rows) == _verdicts(fwk, fresh, probe, rows)
    if all(label != "anti" for _, _, label in ops):
        # no Pod with terms (InterPodAffinity signs none then): every probe was served
        # from the kept state
        assert kept.hits == len(ops)


def test_a_node_change_drops_the_kept_state() -> None:
    sched = Scheduler(load_config(None, known_plugins=known_plugin_names()), clock=lambda: 0.0)
    cluster = sched.cluster
    cluster.add_node(make_node("a").cap(cpu="4", pods=10).labels(**{ZONE: "z0"}).obj())
    fwk = sched.profiles["default-scheduler"]
    kept = PreFilterCache(cluster)
    kept.pre_filter(fwk, _incoming("one", "spread"))
    assert kept.kept
    cluster.add_node(make_node("b").cap(cpu="4", pods=10).labels(**{ZONE: "z1"}).obj())
    assert not kept.kept
    state, _, _ = kept.pre_filter(fwk, _incoming("two", "spread"))
    rows = np.asarray(cluster.nodes.order(), dtype=np.int64)
    assert kept.misses == 2
    assert len(fwk.run_filter(state, _incoming("two", "spread"), rows).feasible) == 2
