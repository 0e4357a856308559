"""What a lived-in cluster adds to the default family's cases beyond ``real_shapes``: Pods
with pod-level ``spec.resources`` (PodLevelResources) beside their containers', running Pods
in the middle of an in-place resize (their container statuses report more or less than the
spec, sometimes infeasible), budgets the disruption controller has not reached yet (no
``status``), the metadata controllers and admission write (ownerReferences, managedFields,
the service-account token volume), and configurations people write: ``pluginConfig`` for a
plugin the profile disables, a second profile the Pod may name, ``percentageOfNodesToScore``
below 100 (per profile too).  Drawn last in ``cases._request`` (a stream of its own), so the
cases of a seed without it stay as they were."""

from __future__ import annotations

import copy
import random
from typing import Any

from generator import Gen
from request_shape import incoming_pods


def _cpu(value: str) -> int:
    return int(value[:-1]) if value.endswith("m") else int(float(value) * 1000)


def _mem(value: str) -> int:
    if value.endswith("Gi"):
        return int(value[:-2]) * 1024
    if value.endswith("Mi"):
        return int(value[:-2])
    return int(value) // (1024 * 1024)


def lived_in(
    gen: Gen,
    items: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    incoming: dict[str, Any],
    config: dict[str, Any] | None,
    version: str | None = None,
) -> dict[str, Any] | None:
    """Change ``items``, ``pods`` and ``incoming`` in place as the module says; return the
    configuration (``config`` or a changed copy).  ``version``: the release drawn for."""
    if gen.chance(0.4):
        pod_level(gen, incoming)
    for pod in pods:
        if gen.chance(0.15):
            pod_level(gen, pod)
        if pod["status"].get("phase") == "Running" and gen.chance(0.2):
            resizing(gen, pod)
    for obj in items:
        if obj["kind"] == "PodDisruptionBudget" and gen.chance(0.3):
            obj.pop("status", None)
    if pods and gen.chance(0.15):
        items.append(_budget_without_status(gen, gen.pick(pods)))
    for i, pod in enumerate([*pods, incoming]):
        if gen.chance(0.3):
            _controller_metadata(pod, i)
    if gen.chance(0.3):
        config = odd_config(gen, config, incoming)
    return config


def pod_level(gen: Gen, pod: dict[str, Any]) -> None:
    """Pod-level ``spec.resources`` (PodLevelResources): requests (and at times limits) of cpu
    and memory at or above the sum of the containers' (validation's rule), sometimes only one
    of the two resources, sometimes with the containers' requests removed."""
    spec = pod["spec"]
    cpu = mem = 0
    for c in spec["containers"]:
        req = c.get("resources", {}).get("requests") or c.get("resources", {}).get("limits") or {}
        cpu += _cpu(req["cpu"]) if "cpu" in req else 0
        mem += _mem(req["memory"]) if "memory" in req else 0
    requests: dict[str, str] = {}
    if gen.chance(0.8):
        requests["cpu"] = f"{cpu + gen.pick([0, 100, 500, 2000])}m"
    if gen.chance(0.7):
        requests["memory"] = f"{mem + gen.pick([0, 128, 1024])}Mi"
    if not requests:
        return
    res: dict[str, Any] = {"requests": requests}
    if gen.chance(0.3):
        res["limits"] = dict(requests)
    spec["resources"] = res
    if gen.chance(0.2):
        for c in spec["containers"]:
            c.get("resources", {}).pop("requests", None)
            c.get("resources", {}).pop("limits", None)


def resizing(gen: Gen, pod: dict[str, Any]) -> None:
    """A running Pod whose in-place resize is under way: a container's status reports
    ``resources`` and ``allocatedResources`` above or below its spec (the kubelet has not
    actuated the new spec yet), with the ``PodResizeInProgress`` or ``PodResizePending``
    condition (reason ``Deferred`` or ``Infeasible``)."""
    spec, status = pod["spec"], pod["status"]
    statuses = status.setdefault("containerStatuses", [])
    by_name = {cs["name"]: cs for cs in statuses}
    for c in spec["containers"]:
        req = c.get("resources", {}).get("requests") or {}
        old_cpu = gen.pick(["100m", "500m", "2", "4"])
        old_mem = gen.pick(["128Mi", "1Gi", "4Gi"])
        reported: dict[str, str] = {"cpu": old_cpu}
        if "memory" in req or gen.chance(0.5):
            reported["memory"] = old_mem
        cs = by_name.get(c["name"])
        if cs is None:
            cs = {"name": c["name"], "image": c["image"], "ready": True, "restartCount": 0}
            cs["state"] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
            statuses.append(cs)
        cs["resources"] = {"requests": reported}
        if gen.chance(0.7):
            cs["allocatedResources"] = dict(reported) if gen.chance(0.6) else dict(req)
    kind = gen.pick(["PodResizeInProgress", "PodResizePending"])
    cond: dict[str, Any] = {"type": kind, "status": "True"}
    if kind == "PodResizePending":
        cond["reason"] = gen.pick(["Deferred", "Infeasible"])
    status.setdefault("conditions", []).append(cond)


POD_LEVEL_RESIZE_GATE = "InPlacePodLevelResourcesVerticalScaling"


def pod_status_resize(gen: Gen, pods: list[dict[str, Any]], version: str | None) -> dict[str, bool]:
    """The Pod's own resize status on some running ``pods`` (in place): ``status.resources``
    (its ``requests`` at times left out) and ``status.allocatedResources`` (the actuated, the
    spec's pod-level requests or absent), as the kubelet writes them under
    InPlacePodLevelResourcesVerticalScaling, on most Pods mid-resize and a few others, with or
    without pod-level ``spec.resources`` (given at times here).  Returns the gates to set
    with them: at v1.35 the alpha gate on (with NodeDeclaredFeatures, its dependency) more
    often than not, from v1.36 the beta gate off at times.  Drawn after every other draw of
    its stream."""
    drawn = False
    for pod in pods:
        status = pod.get("status", {})
        if status.get("phase") != "Running":
            continue
        resizing_now = any(
            c["type"] in ("PodResizeInProgress", "PodResizePending")
            for c in status.get("conditions", [])
        )
        if not gen.chance(0.6 if resizing_now else 0.1):
            continue
        drawn = True
        if not pod["spec"].get("resources") and gen.chance(0.3):
            pod_level(gen, pod)  # the schedule family's running Pods have none otherwise
        reported: dict[str, str] = {"cpu": gen.pick(["200m", "700m", "1", "3"])}
        if gen.chance(0.6):
            reported["memory"] = gen.pick(["256Mi", "1Gi", "3Gi"])
        status["resources"] = {} if gen.chance(0.1) else {"requests": reported}
        spec_level = pod["spec"].get("resources", {}).get("requests")
        which = gen.pick(["reported", "reported", "spec", "none"])
        if which == "reported":
            status["allocatedResources"] = dict(reported)
        elif which == "spec" and spec_level:
            status["allocatedResources"] = dict(spec_level)
    if not drawn or version is None:
        return {}
    minor = int(version.split(".")[1])
    if minor == 35 and gen.chance(0.6):
        return {POD_LEVEL_RESIZE_GATE: True, "NodeDeclaredFeatures": True}
    if minor >= 36 and gen.chance(0.2):
        return {POD_LEVEL_RESIZE_GATE: False}
    return {}


def add_gates(request: dict[str, Any], gates: dict[str, bool], version: str | None) -> None:
    """``gates`` added to ``request``'s ``featureGates`` (in place) when the release accepts
    them together with those set already; otherwise the request is left as it is."""
    if not gates or version is None:
        return
    from kubesched.config.featuregates import check_settings

    merged = {**request.get("featureGates", {}), **gates}
    if not check_settings(version, sorted(merged.items())):
        request["featureGates"] = merged


def _budget_without_status(gen: Gen, pod: dict[str, Any]) -> dict[str, Any]:
    """A PodDisruptionBudget just created over ``pod``'s app: no ``status`` yet (upstream reads
    only ``status.disruptionsAllowed``: none allowed)."""
    meta = pod["metadata"]
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": meta["labels"]["app"]}}}
    if gen.chance(0.5):
        spec["minAvailable"] = gen.pick([0, 1])
    else:
        spec["maxUnavailable"] = gen.pick([1, "100%"])
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb-new", "namespace": meta["namespace"], "generation": 1},
        "spec": spec,
    }


def _controller_metadata(pod: dict[str, Any], i: int) -> None:
    """What a ReplicaSet controller, the server-side apply bookkeeping and the service-account
    admission write on a Pod: ownerReferences, managedFields, the projected token volume and
    its mounts."""
    meta, spec = pod["metadata"], pod["spec"]
    owner = f"rs-{meta.get('labels', {}).get('app', 'web')}"
    meta["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
         "uid": f"uid-rs-{i}", "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip
    meta["managedFields"] = [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:labels": {}}}}
    ]  # fmt: skip
    volume = {
        "name": f"kube-api-access-{i:05d}",
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt",
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    }  # fmt: skip
    spec.setdefault("volumes", []).append(volume)
    for c in spec["containers"]:
        c.setdefault("volumeMounts", []).append(
            {"name": volume["name"], "readOnly": True,
             "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        )  # fmt: skip


def odd_config(gen: Gen, config: dict[str, Any] | None, incoming: dict[str, Any]) -> dict[str, Any]:
    """Valid configurations people write: ``pluginConfig`` for a plugin the profile disables
    (upstream validates only what a profile enables), ``percentageOfNodesToScore`` below 100
    globally or per profile, a second profile (for another scheduler name, which the incoming
    Pod names at times)."""
    out: dict[str, Any] = copy.deepcopy(config) if config else {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler"}],
    }  # fmt: skip
    profile = out["profiles"][0]
    if gen.chance(0.5):
        name, kind, args = gen.pick(
            [
                ("InterPodAffinity", "InterPodAffinityArgs", {"hardPodAffinityWeight": 5}),
                ("NodeResourcesBalancedAllocation", "NodeResourcesBalancedAllocationArgs",
                 {"resources": [{"name": "cpu", "weight": 1}]}),
                ("PodTopologySpread", "PodTopologySpreadArgs", {"defaultingType": "System"}),
                ("NodeAffinity", "NodeAffinityArgs", {}),
            ]
        )  # fmt: skip
        plugins = profile.setdefault("plugins", {})
        multi = plugins.setdefault("multiPoint", {})
        disabled = multi.setdefault("disabled", [])
        if {"name": name} not in disabled:
            disabled.append({"name": name})
        entries = [e for e in profile.get("pluginConfig", []) if e["name"] != name]
        api = "kubescheduler.config.k8s.io/v1"
        profile["pluginConfig"] = [*entries, {"name": name, "args": {
            "apiVersion": api, "kind": kind, **args}}]  # fmt: skip
    if gen.chance(0.4):
        out["percentageOfNodesToScore"] = gen.pick([0, 5, 50, 100])
    if gen.chance(0.2):
        profile["percentageOfNodesToScore"] = gen.pick([1, 50])
    if gen.chance(0.4):
        second: dict[str, Any] = {"schedulerName": "second-scheduler"}
        if gen.chance(0.5):
            second["plugins"] = {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}
        out["profiles"] = [*out["profiles"], second]
        if gen.chance(0.5):
            incoming["spec"]["schedulerName"] = "second-scheduler"
    return out


def lived_in_pods(stream: str, request: dict[str, Any], version: str | None = None) -> None:
    """The Pod draws of :func:`lived_in` for another family's request (changed in place; its
    configuration stays as the family drew it), from the stream named ``stream`` (a seed
    and index of its own: the family's other draws stay as they were): pod-level resources,
    resizes under way on running Pods, controller metadata and the token volume."""
    gen = Gen(random.Random(stream))
    if not gen.chance(0.35):
        return
    items = request["cluster"]["items"]
    to_place = incoming_pods(request)
    for pod in to_place:
        if gen.chance(0.3):
            pod_level(gen, pod)
    running = [o for o in items if o["kind"] == "Pod" and o["spec"].get("nodeName")]
    for pod in running:
        if pod.get("status", {}).get("phase") == "Running" and gen.chance(0.15):
            resizing(gen, pod)
    for i, pod in enumerate([*running, *to_place]):
        if gen.chance(0.3):
            _controller_metadata(pod, i)
    add_gates(request, pod_status_resize(gen, running, version), version)  # drawn last
