"""Plugins declare their locality and the binder's fast path reads the declaration: the
in-tree declarations are those the fast path was proven with, and a plugin declaring none
bars it."""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.config.load import load_config
from kubesched.framework.contract import Locality, locality_of
from kubesched.framework.interface import CycleState, Handle, IntArray, Verdict
from kubesched.framework.runtime import Framework
from kubesched.parallel.binder import cross_node_reasons
from kubesched.parallel.fastpath import FastPath
from kubesched.plugins.registry import in_tree_registry
from kubesched.queue.nominator import Nominator
from kubesched.state.cache import ClusterState

DECLARED = {
    names.NODE_UNSCHEDULABLE: Locality.NODE_LOCAL,
    names.NODE_NAME: Locality.NODE_LOCAL,
    names.TAINT_TOLERATION: Locality.NODE_LOCAL,
    names.NODE_AFFINITY: Locality.NODE_LOCAL,
    names.NODE_PORTS: Locality.NODE_LOCAL,
    names.NODE_RESOURCES_FIT: Locality.NODE_LOCAL,
    names.POD_TOPOLOGY_SPREAD: Locality.CROSS_NODE,
    names.INTER_POD_AFFINITY: Locality.CROSS_NODE,
    names.DYNAMIC_RESOURCES: Locality.CLAIMS,
    names.NODE_DECLARED_FEATURES: Locality.NODE_LOCAL,  # the Pod's spec and the Node object
    names.DEFERRED_POD_SCHEDULING: Locality.NODE_LOCAL,  # the Pod's node and the Node's policy
    names.VOLUME_RESTRICTIONS: Locality.CLAIMS,
    names.NODE_VOLUME_LIMITS: Locality.CLAIMS,
    names.VOLUME_BINDING: Locality.CLAIMS,
    names.VOLUME_ZONE: Locality.CLAIMS,
}


def test_in_tree_declarations() -> None:
    cluster = ClusterState()
    got = {}
    for name, factory in in_tree_registry().items():
        where = locality_of(factory(None, Handle(cluster)))
        if where is not None:
            got[name] = where
    assert got == DECLARED


class _Filter:
    """An out-of-tree Filter passing every node."""

    name = "Anywhere"

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        return Verdict.all_pass(rows.size)


class _LocalFilter(_Filter):
    locality = Locality.NODE_LOCAL


def _framework(extra: type[_Filter] | None) -> Framework:
    registry: dict[str, Any] = dict(in_tree_registry())
    raw: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if extra is not None:
        registry[extra.name] = lambda args, handle: extra()
        raw["profiles"] = [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"filter": {"enabled": [{"name": extra.name}]}},
            }
        ]
    cfg = load_config(raw, known_plugins=registry)
    return Framework(cfg.profiles[0], registry, Handle(ClusterState()))


def _fast_path() -> FastPath:
    return FastPath(ClusterState(), Nominator(), 1)


def test_the_fast_path_reads_declared_locality() -> None:
    assert _fast_path().profile_ok(_framework(None))
    assert not _fast_path().profile_ok(_framework(_Filter))
    assert _fast_path().profile_ok(_framework(_LocalFilter))


def test_cross_node_refusals_are_those_of_cross_node_plugins() -> None:
    assert cross_node_reasons(_framework(None)) == {"topology_spread", "pod_affinity"}
