"""The recording format, version 1: what ``kubesched record`` writes and ``replay`` reads.

A recording is a directory of three files (the reference is ``docs/recording.md``; the JSON
Schema is ``schema/recording-v1.schema.json`` beside this module, :func:`schema`):

- ``recording.json``: the header (:data:`KIND` ``Recording``, :data:`API_VERSION`,
  ``formatVersion`` :data:`FORMAT_VERSION`), the API server and its version, the wall-clock
  start (time 0 of every event), and, once the recorder stopped cleanly, the end, the number
  of events and ``complete: true``;
- ``snapshot.json``: the cluster at time 0, a ``v1`` ``List`` of Nodes, Pods and the other
  objects kubesched reads (the kinds live mode watches), as ``kubectl get -o json`` would
  give them but stripped (:func:`sanitize`): ``simulate``, ``explain`` and ``schedule`` read
  it as they read any snapshot;
- ``events.jsonl``: one JSON object per line, in the order observed: ``seq`` (1, 2, ...),
  ``t`` (seconds since time 0, non-decreasing), ``type`` (:data:`EVENT_FIELDS`) and its
  fields.  Pods and Nodes are written whole (stripped) when created or changed; a bind names
  the Pod, its UID, the node, the Pod's scheduler and ``bindSeconds`` (from the Pod's
  creation, as the recorder saw it, to the bind).

What is never written (:func:`sanitize`): Secret and ConfigMap objects (not watched, and
refused here if handed over), environment variable values (``env[].value`` /
``valueFrom``: only the names stay), ``envFrom``, commands, arguments, probes, lifecycle
hooks, security contexts, volume sources (only each volume's name and type, and a
PersistentVolumeClaim's or generic ephemeral volume's reference), image pull secrets,
``managedFields`` and every annotation but the scheduling ones (:data:`KEPT_ANNOTATIONS`;
``kubectl.kubernetes.io/last-applied-configuration`` holds a whole manifest, env values
included).  A Pod's status keeps its phase, conditions, nominated node and claim statuses; a
Node's keeps capacity, allocatable, conditions (type and status), images and ``nodeInfo``'s
versions; workload templates (ReplicaSet, StatefulSet, ReplicationController) are stripped
as Pods are; a PersistentVolume's source loses its secret references (the driver, handle and
topology stay), and PersistentVolumes, claims and VolumeAttachments keep their status.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

API_VERSION = "kubesched.io/v1alpha1"
KIND = "Recording"
FORMAT_VERSION = 1
SUPPORTED_FORMATS = (1,)
HEADER, SNAPSHOT, EVENTS = "recording.json", "snapshot.json", "events.jsonl"

Obj = dict[str, Any]

POD_CREATED, POD_UPDATED, POD_BOUND = "PodCreated", "PodUpdated", "PodBound"
POD_UNSCHEDULABLE, POD_FINISHED, POD_DELETED = "PodUnschedulable", "PodFinished", "PodDeleted"
NODE_ADDED, NODE_UPDATED, NODE_DELETED = "NodeAdded", "NodeUpdated", "NodeDeleted"
OBJECT_APPLIED, OBJECT_DELETED, RELISTED = "ObjectApplied", "ObjectDeleted", "Relisted"

STR, NUM, OPT_NUM, OBJ = "string", "number", "number or null", "object"
EVENT_FIELDS: dict[str, dict[str, str]] = {
    POD_CREATED: {"object": OBJ},
    POD_UPDATED: {"object": OBJ},
    POD_BOUND: {"pod": STR, "uid": STR, "node": STR, "scheduler": STR, "bindSeconds": OPT_NUM},
    POD_UNSCHEDULABLE: {"pod": STR, "uid": STR, "scheduler": STR, "reason": STR, "message": STR},
    POD_FINISHED: {"pod": STR, "uid": STR, "phase": STR},
    POD_DELETED: {"pod": STR, "uid": STR},
    NODE_ADDED: {"object": OBJ},
    NODE_UPDATED: {"object": OBJ},
    NODE_DELETED: {"node": STR},
    OBJECT_APPLIED: {"object": OBJ},
    OBJECT_DELETED: {"kind": STR, "namespace": STR, "name": STR},
    RELISTED: {"kind": STR},
}
"""Each event type's fields beside ``seq``, ``t`` and ``type`` (all required)."""
OBJECT_KINDS = {
    POD_CREATED: "Pod",
    POD_UPDATED: "Pod",
    NODE_ADDED: "Node",
    NODE_UPDATED: "Node",
}
"""The kind an event's ``object`` must have (``ObjectApplied``: any kind but these two)."""

NEVER_RECORDED = frozenset({"Secret", "ConfigMap"})
"""Kinds :func:`sanitize` refuses (returns None for)."""
KEPT_ANNOTATIONS = (
    "kubesched.io/",
    "scheduling.x-k8s.io/",
    "scheduling.k8s.io/",
    "resource.kubernetes.io/",
    "quota.scheduling.koordinator.sh/",
    "pv.kubernetes.io/",
    "volume.kubernetes.io/",
    "volume.beta.kubernetes.io/",
    "storage.alpha.kubernetes.io/",
)
"""Prefixes of the annotations kept (the ones kubesched's plugins read: the volume plugins a
claim's ``bind-completed``, ``selected-node`` and beta class, a CSINode's migrated plugins);
all others go."""
CONTAINER_FIELDS = ("name", "image", "resources", "ports", "restartPolicy", "resizePolicy")
"""What a container keeps, beside its env variables' names."""
POD_SPEC_DROPPED = frozenset({"imagePullSecrets"})
POD_STATUS_FIELDS = ("phase", "conditions", "nominatedNodeName", "resourceClaimStatuses")
CONDITION_FIELDS = ("type", "status", "reason", "message", "lastTransitionTime")
NODE_STATUS_FIELDS = ("capacity", "allocatable", "images")
NODE_INFO_FIELDS = ("kubeletVersion", "architecture", "operatingSystem")
STATUS_KEPT = frozenset(
    {
        "PodDisruptionBudget",
        "PodGroup",
        "ElasticQuota",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "VolumeAttachment",
    }
)
"""Other kinds whose status is kept (preemption reads a PDB's; gangs and quotas theirs; the
volume plugins a PV's and a claim's phase, and whether a VolumeAttachment is attached)."""
TEMPLATED = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController", "Deployment", "Job"})
"""Kinds with a Pod template, stripped as a Pod is."""
VOLUME_REFERENCES = ("persistentVolumeClaim", "ephemeral")
PV_SPEC_KEPT = frozenset({"capacity", "claimRef", "nodeAffinity"})
"""A PersistentVolume's spec mappings that are not a volume source (kept whole)."""


def schema() -> Obj:
    """The JSON Schema of the format (``schema/recording-v1.schema.json``)."""
    text = resources.files("kubesched.record").joinpath("schema/recording-v1.schema.json")
    data: Obj = json.loads(text.read_text())
    return data


# --------------------------------------------------------------------------- stripping
def sanitize(obj: Obj) -> Obj | None:
    """A copy of ``obj`` fit to be written (see the module docstring); None for a kind that
    is never recorded.  The input is not modified."""
    kind = str(obj.get("kind", ""))
    if kind in NEVER_RECORDED:
        return None
    out: Obj = {
        "apiVersion": obj.get("apiVersion", "v1"),
        "kind": kind,
        "metadata": _metadata(obj.get("metadata") or {}),
    }
    spec = obj.get("spec")
    status = obj.get("status")
    if kind == "Pod":
        out["spec"] = _pod_spec(spec or {})
        out["status"] = _pick(status or {}, POD_STATUS_FIELDS)
        conds = out["status"].get("conditions")
        if isinstance(conds, list):
            out["status"]["conditions"] = [_pick(c, CONDITION_FIELDS) for c in conds]
    elif kind == "Node":
        out["spec"] = {k: v for k, v in (spec or {}).items() if k != "configSource"}
        out["status"] = _node_status(status or {})
    else:
        for key, value in obj.items():
            if key in ("apiVersion", "kind", "metadata", "status", "data", "stringData"):
                continue
            out[key] = value
        if kind in TEMPLATED and isinstance(spec, dict):
            out["spec"] = _templated_spec(spec)
        if kind == "PersistentVolume" and isinstance(spec, dict):
            out["spec"] = _pv_spec(spec)
        if kind in STATUS_KEPT and status is not None:
            out["status"] = status
    return out


def _pv_spec(spec: Obj) -> Obj:
    """A PersistentVolume's spec without its volume source's secret references
    (``nodePublishSecretRef``, ``secretRef``, ...): the driver, handle and topology stay."""
    out: Obj = {}
    for key, value in spec.items():
        if isinstance(value, dict) and key not in PV_SPEC_KEPT:
            value = {k: v for k, v in value.items() if not k.lower().endswith("secretref")}
        out[key] = value
    return out


def _pick(d: Any, keys: tuple[str, ...]) -> Obj:
    if not isinstance(d, dict):
        return {}
    return {k: d[k] for k in keys if k in d}


def _metadata(meta: Any) -> Obj:
    if not isinstance(meta, dict):
        return {}
    out = _pick(
        meta,
        (
            "name",
            "generateName",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "labels",
            "ownerReferences",
        ),
    )
    notes = meta.get("annotations")
    if isinstance(notes, dict):
        kept = {k: v for k, v in notes.items() if str(k).startswith(KEPT_ANNOTATIONS)}
        if kept:
            out["annotations"] = kept
    return out


def _container(c: Any) -> Any:
    if not isinstance(c, dict):
        return c
    out = _pick(c, CONTAINER_FIELDS)
    env = c.get("env")
    if isinstance(env, list):
        out["env"] = [{"name": e["name"]} for e in env if isinstance(e, dict) and "name" in e]
    return out


def _volume(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    out: Obj = {}
    for key, value in v.items():
        if key == "name" or key in VOLUME_REFERENCES:
            out[key] = value
        else:
            out[key] = {}  # the type only: a secret's name, a CSI driver's secrets, ... go
    return out


def _pod_spec(spec: Any) -> Obj:
    if not isinstance(spec, dict):
        return {}
    out: Obj = {}
    for key, value in spec.items():
        if key in POD_SPEC_DROPPED:
            continue
        if key in ("containers", "initContainers", "ephemeralContainers"):
            value = [_container(c) for c in value] if isinstance(value, list) else value
        elif key == "volumes":
            value = [_volume(v) for v in value] if isinstance(value, list) else value
        out[key] = value
    return out


def _templated_spec(spec: Obj) -> Obj:
    out = dict(spec)
    tpl = spec.get("template")
    if isinstance(tpl, dict):
        out["template"] = {
            "metadata": _metadata(tpl.get("metadata") or {}),
            "spec": _pod_spec(tpl.get("spec") or {}),
        }
    claims = spec.get("volumeClaimTemplates")
    if isinstance(claims, list):
        out["volumeClaimTemplates"] = [
            {"metadata": _metadata(c.get("metadata") or {}), "spec": c.get("spec") or {}}
            for c in claims
            if isinstance(c, dict)
        ]
    return out


def _node_status(status: Any) -> Obj:
    out = _pick(status, NODE_STATUS_FIELDS)
    conds = status.get("conditions") if isinstance(status, dict) else None
    if isinstance(conds, list):
        out["conditions"] = [_pick(c, ("type", "status")) for c in conds]
    info = status.get("nodeInfo") if isinstance(status, dict) else None
    if isinstance(info, dict):
        out["nodeInfo"] = _pick(info, NODE_INFO_FIELDS)
    return out


def fingerprint(obj: Obj) -> str:
    """What a change must alter to be recorded: the stripped object without its
    ``resourceVersion`` (a Node's heartbeat moves only that, its conditions' times being
    stripped; a ReplicaSet's status is not kept)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return json.dumps({**obj, "metadata": meta}, sort_keys=True, separators=(",", ":"))


def encode(event: Obj) -> str:
    """One line of ``events.jsonl`` (no newline)."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)
