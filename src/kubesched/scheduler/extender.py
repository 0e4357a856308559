"""One HTTP scheduler extender: upstream's JSON wire format over pooled keep-alive connections.

Upstream ``pkg/scheduler/extender.go`` (``HTTPExtender``) and
``k8s.io/kube-scheduler/extender/v1`` types.  Every call is ``POST <urlPrefix>/<verb>`` with
``Content-Type: application/json``; field names are the Go struct names (Go's JSON has no
tags on these types), and responses are read case-insensitively, as Go's decoder does:

- filter / prioritize send ``ExtenderArgs`` ``{"Pod": <v1.Pod>, "Nodes": <v1.NodeList>|null,
  "NodeNames": [names]|null}``; ``NodeNames`` when ``nodeCacheCapable``, full Nodes otherwise;
- filter answers ``ExtenderFilterResult`` ``{"Nodes", "NodeNames", "FailedNodes",
  "FailedAndUnresolvableNodes", "Error"}``; prioritize answers ``HostPriorityList``
  ``[{"Host": name, "Score": 0..10}]``;
- bind sends ``ExtenderBindingArgs`` ``{"PodName", "PodNamespace", "PodUID", "Node"}`` and
  reads ``ExtenderBindingResult`` ``{"Error"}``;
- preempt sends ``ExtenderPreemptionArgs`` ``{"Pod", "NodeNameToVictims",
  "NodeNameToMetaVictims"}`` (victims as ``{"Pods": [v1.Pod], "NumPDBViolations": n}``, or as
  ``MetaVictims`` ``{"Pods": [{"UID": uid}], ...}`` when ``nodeCacheCapable``; the other map
  ``null``) and reads ``ExtenderPreemptionResult`` ``{"NodeNameToMetaVictims"}``.

The transport (:mod:`kubesched.scheduler.extender_transport`, standard library only):
``httpTimeout`` bounds the whole call like Go's ``http.Client.Timeout`` (reading the answer
included, however slowly it arrives), an answer is read up to 64 MiB or twice the request
(:func:`~kubesched.scheduler.extender_transport.answer_limit`); idle connections
are kept per extender and reused; a request that fails on a reused connection the server
had already closed is retried once on a fresh one (Go's transport does the same).

Deviation: upstream accepts filter results naming nodes that were not sent (non-node-cache
mode); kubesched refuses any unknown node name with upstream's node-cache error.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import objects as api
from kubesched.config.extenders import Extender, tls_context
from kubesched.framework.interface import ExtenderError, Victims
from kubesched.scheduler.extender_transport import ConnectionPool

MAX_EXTENDER_PRIORITY = 10
"""Upstream ``extenderv1.MaxExtenderPriority``: prioritize scores are 0..10."""


@dataclass(slots=True)
class FilterResult:
    """A filter answer: names that passed, and the failure message of each rejected node."""

    passed: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- JSON helpers
def get_field(obj: Mapping[str, Any], name: str) -> Any:
    """``obj[name]`` matched case-insensitively (Go's ``encoding/json``), else None."""
    if name in obj:
        return obj[name]
    low = name.lower()
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == low:
            return v
    return None


def _quantity(name: str, amount: int) -> str:
    return f"{amount}m" if name == api.CPU else str(amount)


def pod_manifest(pod: api.Pod) -> dict[str, Any]:
    """The Pod as a v1 manifest: the parsed one when kept, else a minimal rebuild."""
    if pod.raw:
        return pod.raw
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.uid:
        meta["uid"] = pod.uid
    if pod.labels:
        meta["labels"] = dict(pod.labels)
    if pod.annotations:
        meta["annotations"] = dict(pod.annotations)
    requests = {k: _quantity(k, v) for k, v in sorted(pod.requests.items())}
    spec: dict[str, Any] = {
        "schedulerName": pod.scheduler_name,
        "containers": [{"name": "main", "resources": {"requests": requests}}],
    }
    if pod.priority:
        spec["priority"] = pod.priority
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def node_manifest(node: api.Node) -> dict[str, Any]:
    """The Node as a v1 manifest: the parsed one when kept, else a minimal rebuild."""
    if node.raw:
        return node.raw
    meta: dict[str, Any] = {"name": node.name}
    if node.labels:
        meta["labels"] = dict(node.labels)
    if node.annotations:
        meta["annotations"] = dict(node.annotations)
    spec: dict[str, Any] = {}
    if node.unschedulable:
        spec["unschedulable"] = True
    if node.taints:
        spec["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints]
    alloc = {k: _quantity(k, v) for k, v in sorted(node.allocatable.items())}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": spec,
        "status": {"capacity": alloc, "allocatable": alloc},
    }


def pod_resource_names(pod: api.Pod) -> set[str]:
    """Resources the Pod's containers and init containers request or limit."""
    names = set(pod.requests)
    spec = pod.raw.get("spec") if pod.raw else None
    if isinstance(spec, Mapping):
        for group in ("containers", "initContainers"):
            for c in spec.get(group) or ():
                res = c.get("resources") if isinstance(c, Mapping) else None
                if isinstance(res, Mapping):
                    for part in ("requests", "limits"):
                        names.update(res.get(part) or {})
    return names


# --------------------------------------------------------------------------- the extender
class HTTPExtender:
    """Upstream ``HTTPExtender``: one configured extender and its connection pool."""

    def __init__(self, config: Extender) -> None:
        self.config = config
        self.name = config.url_prefix
        self.weight = config.weight
        self.ignorable = config.ignorable
        self.managed = frozenset(r.name for r in config.managed_resources)
        context = None
        if config.url_prefix.startswith("https") or config.enable_https or config.tls_config:
            context = tls_context(config.enable_https, config.tls_config)
        self.pool = ConnectionPool(config.url_prefix, config.http_timeout, context)
        if config.tls_config is not None:
            self.pool.sni = config.tls_config.server_name

    def is_filter(self) -> bool:
        """Has a filter verb."""
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        """Has a prioritize verb."""
        return bool(self.config.prioritize_verb)

    def is_binder(self) -> bool:
        """Has a bind verb."""
        return bool(self.config.bind_verb)

    def supports_preemption(self) -> bool:
        """Has a preempt verb (upstream ``SupportsPreemption``)."""
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: api.Pod) -> bool:
        """Upstream ``IsInterested``: no managed resources, or the Pod asks for one of them
        (requests or limits of its containers or init containers)."""
        if not self.managed:
            return True
        return not self.managed.isdisjoint(pod_resource_names(pod))

    # ---------------------------------------------------------------- calls
    def send(self, verb: str, body: bytes) -> Any:
        """POST and decode the JSON answer; every failure is an :class:`ExtenderError`."""
        url = f"{self.pool.base}/{verb}"
        try:
            status, data = self.pool.post(verb, body)
        except TimeoutError as e:
            msg = f'Post "{url}": context deadline exceeded (Client.Timeout exceeded)'
            raise ExtenderError(self.name, verb, msg, timeout=True) from e
        except (OSError, http.client.HTTPException) as e:
            raise ExtenderError(self.name, verb, f'Post "{url}": {e}') from e
        if status != 200:
            msg = f"failed {verb} with extender at URL {url}, code {status}"
            raise ExtenderError(self.name, verb, msg)
        try:
            return json.loads(data)
        except ValueError as e:
            raise ExtenderError(self.name, verb, f"extender {self.name!r}: {e}") from e

    def args_body(self, pod_json: str, names: Sequence[str], nodes_json: Sequence[str]) -> bytes:
        """``ExtenderArgs`` from pre-serialised parts (node names or Node manifests)."""
        if self.config.node_cache_capable:
            tail = '"Nodes":null,"NodeNames":' + json.dumps(list(names))
        else:
            tail = '"Nodes":{"metadata":{},"items":[' + ",".join(nodes_json) + ']},"NodeNames":null'
        return ('{"Pod":' + pod_json + "," + tail + "}").encode()

    def filter(self, body: bytes, sent: Sequence[str]) -> FilterResult:
        """Upstream ``Filter``: the names that passed and the failure maps."""
        verb = self.config.filter_verb
        result = self.send(verb, body)
        if not isinstance(result, Mapping):
            raise ExtenderError(self.name, verb, f"extender {self.name!r}: bad filter result")
        err = get_field(result, "Error")
        if err:
            raise ExtenderError(self.name, verb, str(err))
        known = set(sent)
        names = get_field(result, "NodeNames")
        nodes = get_field(result, "Nodes")
        passed: list[str] = []
        if self.config.node_cache_capable and names is not None:
            passed = [str(n) for n in names]
        elif isinstance(nodes, Mapping):
            items = get_field(nodes, "items") or []
            passed = [str((get_field(i, "metadata") or {}).get("name", "")) for i in items]
        for n in passed:
            if n not in known:
                msg = (
                    f'extender "{self.name}" claims a filtered node "{n}" which is not found '
                    "in the input node list"
                )
                raise ExtenderError(self.name, verb, msg)
        failed = get_field(result, "FailedNodes") or {}
        unresolvable = get_field(result, "FailedAndUnresolvableNodes") or {}
        return FilterResult(
            passed,
            {str(k): str(v) for k, v in failed.items()},
            {str(k): str(v) for k, v in unresolvable.items()},
        )

    def prioritize(self, body: bytes) -> dict[str, int]:
        """Upstream ``Prioritize``: host to the extender's score (unscaled, unweighted)."""
        verb = self.config.prioritize_verb
        result = self.send(verb, body)
        if not isinstance(result, list):
            raise ExtenderError(self.name, verb, f"extender {self.name!r}: bad priority list")
        out: dict[str, int] = {}
        for hp in result:
            if isinstance(hp, Mapping):
                out[str(get_field(hp, "Host"))] = int(get_field(hp, "Score") or 0)
        return out

    def bind(self, pod: api.Pod, node: str) -> None:
        """Upstream ``Bind``: raises :class:`ExtenderError` when the extender fails it."""
        verb = self.config.bind_verb
        args = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid}
        args["Node"] = node
        result = self.send(verb, json.dumps(args).encode())
        err = get_field(result, "Error") if isinstance(result, Mapping) else None
        if err:
            raise ExtenderError(self.name, verb, str(err))

    def process_preemption(
        self,
        pod_json: str,
        victims: Mapping[str, Victims],
        pods_on: Callable[[str], Sequence[api.Pod] | None],
    ) -> dict[str, Victims]:
        """Upstream ``ProcessPreemption``: send the candidates (node name to victims) and
        return the extender's answer, its Pod UIDs resolved among ``pods_on(node)`` (the Pods
        on a node; None for an unknown node, which is an error as upstream)."""
        verb = self.config.preempt_verb
        meta = self.config.node_cache_capable
        out: dict[str, Any] = {}
        for node, v in victims.items():
            pods = [{"UID": p.uid} if meta else pod_manifest(p) for p in v.pods]
            out[node] = {"Pods": pods, "NumPDBViolations": v.num_pdb_violations}
        encoded = json.dumps(out, separators=(",", ":"))
        full, metas = ("null", encoded) if meta else (encoded, "null")
        body = f'{{"Pod":{pod_json},"NodeNameToVictims":{full},"NodeNameToMetaVictims":{metas}}}'
        result = self.send(verb, body.encode())
        answer = get_field(result, "NodeNameToMetaVictims") if isinstance(result, Mapping) else None
        got: dict[str, Victims] = {}
        for node, mv in (answer or {}).items():
            on_node = pods_on(str(node))
            if on_node is None:
                raise ExtenderError(self.name, verb, f'nodeinfo not found for node name "{node}"')
            by_uid = {p.uid: p for p in on_node}
            mv = mv if isinstance(mv, Mapping) else {}
            chosen: list[api.Pod] = []
            for mp in get_field(mv, "Pods") or ():
                uid = str(get_field(mp, "UID") or "") if isinstance(mp, Mapping) else ""
                if uid not in by_uid:
                    msg = (
                        f"extender: {self.name} claims to preempt pod (UID: &{{{uid}}}) on "
                        f"node: {node}, but the pod is not found on that node"
                    )
                    raise ExtenderError(self.name, verb, msg)
                chosen.append(by_uid[uid])
            got[str(node)] = Victims(chosen, int(get_field(mv, "NumPDBViolations") or 0))
        return got

    def close(self) -> None:
        """Close pooled connections."""
        self.pool.close()
