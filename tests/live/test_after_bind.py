"""The update a bind causes is not parsed again (live/dispatch.after_bind): the Pod it gives
is, slot for slot, what the parse gives; any other change is parsed."""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.api import podquick
from kubesched.live import dispatch as dispatch_mod
from kubesched.live.dispatch import Dispatcher, after_bind
from kubesched.live.informer import ADDED, MODIFIED, Delta
from kubesched.scheduler import Scheduler
from tests.live.conftest import make_config, node, pod


def created(name: str = "p", **spec: Any) -> dict[str, Any]:
    """A pending Pod as the API server answers it."""
    obj = pod(name)
    obj["metadata"].update(
        resourceVersion="10",
        uid="u-" + name,
        generation=1,
        labels={"app": "a"},
        managedFields=[{"manager": "kubectl", "operation": "Update"}],
    )
    obj["spec"].update(spec)
    obj["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    return obj


def bound(obj: dict[str, Any], node_name: str = "n1") -> dict[str, Any]:
    """``obj`` after kube-apiserver's binding subresource."""
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = "11"
    new["metadata"]["managedFields"].append({"manager": "kube-scheduler", "operation": "Update"})
    new["spec"]["nodeName"] = node_name
    new["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "observedGeneration": 1}
    ]
    new["status"]["observedGeneration"] = 1
    return new


def slots(p: api.Pod) -> dict[str, Any]:
    out = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
    out["key"] = p.key
    return out


SHAPES = {
    "quick path": {},
    "full path (spread constraints)": {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "a"}},
            }
        ]
    },
    "tolerations and affinity": {
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}
                    ]
                }
            }
        },
    },
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_bind_gives_what_the_parse_gives(shape: str) -> None:
    obj = created(**SHAPES[shape])
    old = podquick.parse_pod(obj)
    new = bound(obj)
    pod_ = after_bind(old, new)
    assert pod_ is not None and pod_ is not old
    assert slots(pod_) == slots(podquick.parse_pod(new))
    assert pod_.raw is new and pod_.node_name == "n1" and old.node_name == ""


def _label(o: dict[str, Any]) -> None:
    o["metadata"]["labels"]["app"] = "b"


def _annotation(o: dict[str, Any]) -> None:
    o["metadata"]["annotations"] = {"x": "y"}


def _request(o: dict[str, Any]) -> None:
    o["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}


def _nominated(o: dict[str, Any]) -> None:
    o["status"]["nominatedNodeName"] = "n2"


def _phase(o: dict[str, Any]) -> None:
    o["status"]["phase"] = "Running"


def _resize(o: dict[str, Any]) -> None:
    o["status"]["conditions"].append({"type": "PodResizePending", "reason": "Infeasible"})


def _uid(o: dict[str, Any]) -> None:
    o["metadata"]["uid"] = "other"


def _odd_node(o: dict[str, Any]) -> None:
    o["spec"]["nodeName"] = 7


def _new_key(o: dict[str, Any]) -> None:
    o["apiVersion"] = "v2"


@pytest.mark.parametrize(
    "change",
    [_label, _annotation, _request, _nominated, _phase, _resize, _uid, _odd_node, _new_key],
)
def test_any_other_change_is_parsed(change: Any) -> None:
    obj = created()
    old = podquick.parse_pod(obj)
    new = bound(obj)
    change(new)
    assert after_bind(old, new) is None


def test_a_condition_other_than_pod_scheduled_must_stay_the_same() -> None:
    obj = created()
    obj["status"]["conditions"] = [{"type": "PodResizePending", "reason": "Deferred"}]
    old = podquick.parse_pod(obj)
    new = bound(obj)
    new["status"]["conditions"] = [
        {"type": "PodResizePending", "reason": "Deferred"},
        {"type": "PodScheduled", "status": "True"},
    ]
    assert after_bind(old, new) is not None
    new["status"]["conditions"][0]["reason"] = "Infeasible"
    assert after_bind(old, new) is None


def test_the_dispatcher_does_not_parse_its_bind_again(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = podquick.parse_pod

    def counting(obj: dict[str, Any], path: str = "") -> api.Pod:
        parsed.append(obj["metadata"]["resourceVersion"])
        return real(obj, path)

    monkeypatch.setattr(dispatch_mod.podquick, "parse_pod", counting)
    d = Dispatcher(Scheduler(make_config(leader=False), clock=time.monotonic))
    d.apply(Delta("Node", ADDED, None, node("n1")))
    obj = created()
    d.apply(Delta("Pod", ADDED, None, obj))
    new = bound(obj)
    d.apply(Delta("Pod", MODIFIED, obj, new))
    assert parsed == ["10"]
    assert d.scheduler.cluster.pods["default/p"].pod.node_name == "n1"
    assert d.pods["default/p"].raw is new
    relabelled = copy.deepcopy(new)
    relabelled["metadata"]["resourceVersion"] = "12"
    _label(relabelled)
    d.apply(Delta("Pod", MODIFIED, new, relabelled))
    assert parsed == ["10", "12"]
    assert d.scheduler.cluster.pods["default/p"].pod.labels == {"app": "b"}
