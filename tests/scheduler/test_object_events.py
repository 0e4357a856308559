"""The scheduler's informer handlers raise the events upstream's do, with the objects
upstream's hand the queueing hints: a storage object's change with the object before and
after (``Scheduler.on_object``), a nominated pending Pod's deletion
(``Scheduler.on_pod_delete``: ``AssignedPodDelete`` for Pods of lower or equal priority)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.featuregates import FeatureGates
from kubesched.config.load import load_config
from kubesched.framework.clusterevents import Resource
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler
from kubesched.testing import VirtualClock

checks: list[Any] = []
"""The ``pre_check`` of each event :func:`_scheduler`'s queue heard."""


def _scheduler(
    monkeypatch: Any, version: str | None = None
) -> tuple[Scheduler, list[tuple[str, Any, Any]]]:
    """A scheduler (of ``version``; None: the default) whose queue records each event it is
    told about and the objects."""
    gates = FeatureGates(version=version) if version else None
    config = load_config(None, known_plugins=known_plugin_names(), gates=gates)
    s = Scheduler(config, clock=VirtualClock())
    heard: list[tuple[str, Any, Any]] = []
    checks.clear()

    def spy(event: Any, old: Any = None, new: Any = None, pre_check: Any = None) -> None:
        heard.append((str(event.resource), old, new))
        checks.append(pre_check)

    monkeypatch.setattr(s.queue, "move_all_to_active_or_backoff", spy)
    return s, heard


def _csinode(count: int) -> dict[str, Any]:
    driver = {"name": "pd", "nodeID": "n", "allocatable": {"count": count}}
    return {"kind": "CSINode", "metadata": {"name": "n"}, "spec": {"drivers": [driver]}}


def test_on_object_hands_the_hints_the_object_before_and_after(monkeypatch: Any) -> None:
    s, heard = _scheduler(monkeypatch)
    before, after = _csinode(1), _csinode(2)
    va = {"kind": "VolumeAttachment", "metadata": {"name": "va"},
          "spec": {"attacher": "pd", "nodeName": "n", "source": {}}}  # fmt: skip
    s.on_object(before)
    s.on_object(after)
    s.on_object(va)
    s.on_object(va, deleted=True)
    assert heard == [
        (Resource.CSI_NODE.value, None, before),
        (Resource.CSI_NODE.value, before, after),
        (Resource.VOLUME_ATTACHMENT.value, None, va),
        (Resource.VOLUME_ATTACHMENT.value, va, None),
    ]


def _pod(name: str, priority: int) -> Any:
    spec = {"priority": priority, "containers": [{"name": "c"}]}
    return parse_pod({"metadata": {"name": name}, "spec": spec}, "pod")


def test_a_nominated_pending_pod_deleted_releases_lower_or_equal_priority(
    monkeypatch: Any,
) -> None:
    """Upstream's ``deletePodFromSchedulingQueue``: an unbound Pod without a nomination
    raises nothing; a nominated one raises ``AssignedPodDelete`` (the Pods that counted it
    as assigned there may fit now), offered to Pods of lower or equal priority only."""
    s, heard = _scheduler(monkeypatch)
    plain = _pod("p", 10)
    nominated = plain.nominated_to("n1")
    s.on_pod_delete(plain)
    assert heard == []
    s.on_pod_delete(nominated)
    assert heard == [(Resource.ASSIGNED_POD.value, nominated, None)]
    (check,) = checks
    assert check is not None
    assert [check(_pod(n, p)) for n, p in (("low", 9), ("same", 10), ("high", 11))] == [
        True,
        True,
        False,
    ]


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "1.37"])
def test_an_assumed_pod_deleted_before_its_bind_lands_frees_its_node(
    monkeypatch: Any, version: str
) -> None:
    """From v1.35 upstream's ``handleAssumedPodDeletion``: a Pod still in its binding cycle
    (a preemption's victim, say) is deleted while the API server holds it unbound; the
    ``AssignedPodDelete`` it raises carries the cache's copy, on its node, so the hints
    see room freed there (the API's unbound copy made NodeResourcesFit skip every Pod:
    v1.36 seed 20361 case 170, ``tests/oracle/regressions/case-bc6f0579bd37.json``).
    v1.34's ``deletePodFromSchedulingQueue`` hands on the deleted object."""
    s, heard = _scheduler(monkeypatch, version)
    node = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1", "pods": "2"}}}
    s.on_node_add(parse_node(node))
    heard.clear()
    pending = _pod("p", 0)
    s.cluster.assume_pod(pending.bound_to("n1"), "n1")
    s.on_pod_delete(pending)
    ((resource, old, new),) = heard
    assert (resource, new) == (Resource.ASSIGNED_POD.value, None)
    assert (old.key, old.node_name) == ("default/p", "" if version == "1.34" else "n1")
    assert not s.cluster.is_assumed("default/p")
