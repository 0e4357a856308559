"""Binding conditions of an allocated claim (``plugins.dynamicresources.binding``) and
v1.34's DRAExtendedResource mapping and requests (``devices.extended``)."""

from __future__ import annotations

from typing import Any

from kubesched.api import resource as r
from kubesched.devices import extended as ext
from kubesched.plugins.dynamicresources import binding

PAST, FUTURE = "2026-01-01T00:00:00Z", "2099-01-01T00:00:00Z"


def _claim(stamp: str | None, conditions: list[tuple[str, str]] | None) -> dict[str, Any]:
    res = {
        "request": "r",
        "driver": "d",
        "pool": "p",
        "device": "x",
        "bindingConditions": ["attached"],
        "bindingFailureConditions": ["failed"],
    }
    alloc: dict[str, Any] = {"devices": {"results": [res]}}
    if stamp:
        alloc["allocationTimestamp"] = stamp
    status: dict[str, Any] = {"allocation": alloc}
    if conditions is not None:
        status["devices"] = [
            {
                "driver": "d",
                "pool": "p",
                "device": "x",
                "conditions": [{"type": t, "status": s} for t, s in conditions],
            }
        ]
    return {"metadata": {"name": "c"}, "status": status}


def test_ready_needs_every_binding_condition_true() -> None:
    assert binding.ready(_claim(PAST, [("attached", "True")])) is True
    assert binding.ready(_claim(PAST, [("attached", "False")])) is False
    assert binding.ready(_claim(PAST, None)) is False  # no report for the device


def test_a_true_failure_condition_is_the_failure_message() -> None:
    out = binding.ready(_claim(FUTURE, [("attached", "True"), ("failed", "True")]))
    assert out == 'claim c binding failed: reason=, message=""'


def test_blocked_when_failed_or_pending_past_the_timeout() -> None:
    assert binding.blocked(_claim(FUTURE, [("failed", "True")]), 600)
    assert binding.blocked(_claim(PAST, [("attached", "False")]), 600)
    assert not binding.blocked(_claim(FUTURE, [("attached", "False")]), 600)
    assert not binding.blocked(_claim(None, None), 600)  # no allocationTimestamp
    assert not binding.blocked(_claim(PAST, [("attached", "True")]), 600)


def _class(name: str, extended: str | None) -> r.DeviceClass:
    spec: dict[str, Any] = {"selectors": []}
    if extended:
        spec["extendedResourceName"] = extended
    return r.parse_class({"metadata": {"name": name}, "spec": spec})


def test_v134_mapping_names_a_class_by_its_extended_name_only() -> None:
    m = ext.resolver_v134([_class("gpu", "example.com/gpu"), _class("nic", None)])
    assert sorted(m) == ["deviceclass.resource.kubernetes.io/nic", "example.com/gpu"]
    newer = ext.resolver([_class("gpu", "example.com/gpu")])
    assert "deviceclass.resource.kubernetes.io/gpu" in newer  # v1.35+: the implicit name too


def test_v134_requests_one_per_container_without_reuse() -> None:
    gpu = _class("gpu", "example.com/gpu")
    spec = {
        "initContainers": [{"name": "init", "resources": {"requests": {"example.com/gpu": "2"}}}],
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}}}
        ],
    }
    reqs, maps = ext.device_requests_v134(spec, ["example.com/gpu"], lambda n: gpu)
    assert [(q["name"], q["exactly"]["count"]) for q in reqs] == [
        ("container-0-request-0", 2),
        ("container-1-request-1", 1),
    ]
    assert [(m.container, m.request) for m in maps] == [
        ("init", "container-0-request-0"),
        ("a", "container-1-request-1"),
    ]
    reqs, _ = ext.device_requests(spec, ["example.com/gpu"], lambda n: gpu)
    assert [q["exactly"]["count"] for q in reqs] == [1, 1]  # v1.35+: init reuses a's
