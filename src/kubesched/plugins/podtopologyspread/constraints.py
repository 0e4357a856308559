"""Spread constraints as the plugin uses them (upstream ``common.go``).

A :class:`Selector` is upstream's parsed ``labels.Selector``: ``reqs is None`` is
``labels.Nothing()`` (a nil ``labelSelector``), ``reqs == ()`` is ``labels.Everything()``
(``labelSelector: {}``).  Two upstream subtleties are kept on purpose:

- counting existing Pods skips *empty* selectors (``countPodsMatchSelector`` returns 0 when
  ``selector.Empty()``, v1.34), so both nil and ``{}`` count nothing, while the incoming Pod's
  self-match and the queueing hints use real matching (``{}`` matches every Pod);
- ``matchLabelKeys`` values from the incoming Pod's labels are ANDed into the selector, except
  into a nil selector (which stays Nothing).

Default constraints deduce their selector as upstream's ``DefaultSelector``: the Services
selecting the Pod (``ClusterState.services``) and the ReplicationController, ReplicaSet or
StatefulSet controlling it (``ClusterState.objects``, from the snapshot, scenario or
informers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api import fields
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.plugins.podtopologyspread import args as a

Req = tuple[str, str, tuple[str, ...]]
"""``(key, operator, values)``; operator In, NotIn, Exists or DoesNotExist (``=`` is In)."""

_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


class SelectorError(ValueError):
    """A label selector upstream's ``LabelSelectorAsSelector`` would reject."""


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed label selector; ``reqs`` is sorted so equal selectors compare (and hash) equal."""

    reqs: tuple[Req, ...] | None

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``labels.Selector.Matches``: Nothing matches nothing, Everything matches all."""
        if self.reqs is None:
            return False
        for key, op, values in self.reqs:
            value = labels.get(key)
            if op == "In":
                if value is None or value not in values:
                    return False
            elif op == "NotIn":
                if value is not None and value in values:
                    return False
            elif op == "Exists":
                if value is None:
                    return False
            elif value is not None:  # DoesNotExist
                return False
        return True

    @property
    def counts_nothing(self) -> bool:
        """True when existing Pods are never counted (nil or empty selector, v1.34)."""
        return not self.reqs


NOTHING = Selector(None)
EVERYTHING = Selector(())


def _normalised(reqs: Iterable[Req]) -> Selector:
    return Selector(tuple(sorted(reqs)))


def selector_from(ls: api.LabelSelector | None) -> Selector:
    """Upstream ``metav1.LabelSelectorAsSelector``; raises :class:`SelectorError`."""
    if ls is None:
        return NOTHING
    reqs: list[Req] = [(k, "In", (v,)) for k, v in ls.match_labels]
    for r in ls.match_expressions:
        if r.operator not in _OPS:
            raise SelectorError(f'"{r.operator}" is not a valid label selector operator')
        if r.operator in ("In", "NotIn") and not r.values:
            raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
        if r.operator in ("Exists", "DoesNotExist") and r.values:
            raise SelectorError("values set must be empty for exists and does not exist")
        reqs.append((r.key, r.operator, tuple(sorted(set(r.values)))))
    return _normalised(reqs)


def merge_label_set(selector: Selector, match_labels: Mapping[str, str]) -> Selector:
    """Upstream ``mergeLabelSetWithSelector``: AND ``key=value`` pairs in (Nothing stays)."""
    if selector.reqs is None or not match_labels:
        return selector
    extra = [(k, "In", (v,)) for k, v in match_labels.items()]
    return _normalised([*selector.reqs, *extra])


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """Upstream ``labels.SelectorFromSet``: equality requirements (empty set: Everything)."""
    return _normalised((k, "In", (v,)) for k, v in labels.items())


@dataclass(frozen=True, slots=True)
class Constraint:
    """Upstream ``topologySpreadConstraint``: one parsed constraint with its defaults applied."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False


def filter_constraints(
    constraints: Sequence[api.TopologySpreadConstraint],
    pod_labels: Mapping[str, str],
    action: str,
) -> list[Constraint]:
    """Upstream ``filterTopologySpreadConstraints``: those with ``whenUnsatisfiable ==
    action``, parsed, with ``matchLabelKeys`` merged in and nil fields defaulted
    (minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore)."""
    out: list[Constraint] = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = selector_from(c.label_selector)
        if c.match_label_keys:
            pairs = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            selector = merge_label_set(selector, pairs)
        out.append(
            Constraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains if c.min_domains is not None else 1,
                honor_affinity=(c.node_affinity_policy or a.HONOR) == a.HONOR,
                honor_taints=(c.node_taints_policy or a.IGNORE) == a.HONOR,
            )
        )
    return out


ServiceIndex = Mapping[str, tuple[str, Mapping[str, str]]]
"""``ClusterState.services``: ``"ns/name"`` to ``(namespace, spec.selector)``."""

ObjectIndex = Mapping[tuple[str, str], Mapping[str, Any]]
"""``ClusterState.objects``: raw objects by ``(kind, "ns/name")`` (owning controllers)."""

_CONTROLLERS = {
    ("v1", "ReplicationController"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
}


def default_selector(
    pod: api.Pod, services: ServiceIndex, objects: ObjectIndex | None = None
) -> Selector:
    """Upstream ``helper.DefaultSelector``: the selectors of the Services in the Pod's
    namespace whose (non-empty) selector matches the Pod, merged, and then those of the
    ReplicationController, ReplicaSet or StatefulSet that controls the Pod (its controller
    ``ownerReference``, looked up in ``objects``); Everything when there are none."""
    merged: dict[str, str] = {}
    labels = pod.labels
    for namespace, sel in services.values():
        if namespace != pod.namespace or not sel:
            continue
        if all(labels.get(k) == v for k, v in sel.items()):
            merged.update(sel)
    selector = selector_from_set(merged) if merged else EVERYTHING
    if not pod.owner_references:  # the common bare Pod: no controller to add
        return selector
    owner = next((o for o in pod.owner_references if o.controller), None)
    if owner is None or objects is None or (owner.api_version, owner.kind) not in _CONTROLLERS:
        return selector
    obj = objects.get((owner.kind, f"{pod.namespace}/{owner.name}"))
    spec = obj.get("spec") if obj is not None else None
    if not isinstance(spec, Mapping):
        return selector
    if owner.kind == "ReplicationController":  # spec.selector is a plain label map
        rc = spec.get("selector")
        if isinstance(rc, Mapping):
            merged.update({str(k): str(v) for k, v in rc.items()})
        return selector_from_set(merged)
    try:  # ReplicaSet, StatefulSet: a LabelSelector, its requirements added
        other = selector_from(fields.label_selector(dict(spec), "selector", ""))
    except (InputError, SelectorError):
        return selector
    if other.reqs is None or selector.reqs is None:
        return selector
    return _normalised([*selector.reqs, *other.reqs])


def build_default_constraints(
    constraints: Sequence[Constraint],
    pod: api.Pod,
    services: ServiceIndex,
    objects: ObjectIndex | None = None,
) -> list[Constraint]:
    """Upstream ``buildDefaultConstraints``: the defaults for an action, parsed
    (:func:`filter_constraints` of the defaults for the Pod's labels and that action), with
    the deduced selector, or none when the selector is empty."""
    if not constraints:
        return []
    selector = default_selector(pod, services, objects)
    if not selector.reqs:
        return []
    return [
        Constraint(
            c.max_skew,
            c.topology_key,
            selector,
            c.min_domains,
            c.honor_affinity,
            c.honor_taints,
        )
        for c in constraints
    ]


def node_has_topology_keys(labels: Mapping[str, str], constraints: Iterable[Constraint]) -> bool:
    """Upstream ``nodeLabelsMatchSpreadConstraints``: the node has every topology key."""
    return all(c.topology_key in labels for c in constraints)


def pod_matches_any(constraints: Iterable[Constraint], labels: Mapping[str, str]) -> bool:
    """Upstream ``podLabelsMatchSpreadConstraints``."""
    return any(c.selector.matches(labels) for c in constraints)


def topology_keys_changed(
    old: Mapping[str, str], new: Mapping[str, str], constraints: Iterable[Constraint]
) -> bool:
    """Upstream ``checkTopologyKeyLabelsChanged``."""
    return any(old.get(c.topology_key, "") != new.get(c.topology_key, "") for c in constraints)
