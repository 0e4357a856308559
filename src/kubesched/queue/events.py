"""Cluster events as the scheduling queue sees them: names, labels, matching, pod/node diffs.

Mirrors upstream v1.34 ``pkg/scheduler/framework/events.go`` and ``types.go``:

- the queue's own event labels (``ScheduleAttemptFailure``, ``BackoffComplete``,
  ``PopFromBackoffQ``, ``ForceActivate``, ``UnschedulableTimeout``) and the standard
  ``EVENT_*`` cluster events, used as the ``event`` label of
  ``scheduler_queue_incoming_pods_total``;
- :func:`matches`, upstream ``MatchClusterEvents``: a *registered* event covers an *incoming*
  one when resources match (``Pod`` covers ``AssignedPod``/``UnschedulablePod``/``TargetPod``,
  ``*`` covers all) and the incoming action is the same or more specific (``incoming.action <=
  registered.action``).  ``ClusterEvent.matches`` in the framework contract lacks that last
  condition, so a plugin registering ``Node/UpdateNodeLabel`` would wrongly match a generic
  ``Node/Update``; the queue uses this function instead;
- :func:`event_label`, upstream ``ClusterEvent.Label()`` (``NodeUpdateNodeLabel``,
  ``UnschedulablePodAdd``; Go's ``ActionType.String()`` spelling);
- :func:`pod_scheduling_properties_change` / :func:`node_scheduling_properties_change`, which
  turn an object update into the specific ``Update*`` events plugins register for.
  A node's conditions are read from the object it was parsed from (``Node.raw``).
"""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.framework.events import preemption_policy
from kubesched.framework.interface import ActionType, ClusterEvent, Resource

SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"

EVENT_ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD)
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE)
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE)
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.DELETE)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, UNSCHEDULABLE_TIMEOUT)
EVENT_FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, ActionType.ALL, FORCE_ACTIVATE)
EVENT_POD_SCALE_DOWN = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCALE_DOWN)
"""Used by ``assigned_pod_updated`` to decide whether to consider every unschedulable Pod."""


def is_wildcard(event: ClusterEvent) -> bool:
    """Upstream ``ClusterEventIsWildCard``: resource ``*`` and action ``All``."""
    return event.resource == Resource.WILDCARD and event.action == ActionType.ALL


def _resources_match(registered: Resource, incoming: Resource) -> bool:
    return (
        registered == Resource.WILDCARD
        or registered == incoming
        or (
            registered == Resource.POD
            and incoming in (Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD, Resource.TARGET_POD)
        )
    )


def matches(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """Upstream ``MatchClusterEvents(registered, incoming)``.

    An incoming wildcard event matches only a registered wildcard; the queue special-cases
    wildcard events before asking plugins.
    """
    if is_wildcard(registered):
        return True
    return (
        _resources_match(registered.resource, incoming.resource)
        and bool(registered.action & incoming.action)
        and int(incoming.action) <= int(registered.action)
    )


def _action_string(action: ActionType) -> str:
    """Go's ``ActionType.String()``: ``Add``, ``UpdateNodeLabel``, ``Update``, ``All``; else ''."""
    name = action.name
    if not name or "|" in name:
        return ""
    return "".join(part.capitalize() for part in name.split("_"))


_LABELS: tuple[dict[ClusterEvent, str], dict[ClusterEvent, str]] = ({}, {})
""":func:`event_label`'s answers, before v1.37 and since (events are few: a handful of
resources and actions; each label is worked out once, not once per event heard)."""
_LABELS_MAX = 4096


def event_label(event: ClusterEvent, *, since_v137: bool = False) -> str:
    """Upstream ``ClusterEvent.Label()``: the custom label, else resource + action.

    ``since_v137``: the release is v1.37 or newer, where upstream spells the unscheduled
    Pod resource ``UnscheduledPod`` (``UnscheduledPodDelete``); before, ``UnschedulablePod``.
    """
    if event.label:
        return event.label
    known = _LABELS[since_v137]
    label = known.get(event)
    if label is None:
        resource = event.resource.value
        if since_v137 and event.resource == Resource.UNSCHEDULED_POD:
            resource = "UnscheduledPod"
        label = f"{resource}{_action_string(event.action)}"
        if len(known) >= _LABELS_MAX:
            known.clear()
        known[event] = label
    return label


def pod_scheduling_properties_change(
    new: api.Pod, old: api.Pod, *, target: bool = False, since_v137: bool = False
) -> list[ClusterEvent]:
    """The ``UpdatePod*`` events an update from ``old`` to ``new`` amounts to.

    The resource is ``AssignedPod`` when ``new`` has a node, else ``TargetPod`` when
    ``target`` (v1.37+: the update is of the queued Pod itself; upstream's ``isTargetPod``),
    else ``UnschedulablePod``; ``since_v137``: a request that grew or appeared is also
    ``UpdatePodScaleUp`` (upstream v1.37's extractor).  When no specific change is found the
    generic ``Update`` action is returned (upstream v1.34).
    """
    if new.node_name:
        resource = Resource.ASSIGNED_POD
    elif target:
        resource = Resource.TARGET_POD
    else:
        resource = Resource.UNSCHEDULED_POD
    actions: list[ActionType] = []
    if new.labels != old.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(new, old):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if since_v137 and _scaled_down(old, new):  # new requests more than old: a scale-up
        actions.append(ActionType.UPDATE_POD_SCALE_UP)
    if not new.scheduling_gates and old.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.tolerations) != len(old.tolerations):
        # API validation only allows adding tolerations, so a length change is enough.
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if new.resource_claim_statuses != old.resource_claim_statuses:
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE)
    return [ClusterEvent(resource, a) for a in actions]


def _scaled_down(new: api.Pod, old: api.Pod) -> bool:
    for name, old_amount in old.requests.items():
        new_amount = new.requests.get(name)
        if new_amount is None or old_amount > new_amount:
            return True
    return False


def node_scheduling_properties_change(new: api.Node, old: api.Node) -> list[ClusterEvent]:
    """The ``UpdateNode*`` events an update from ``old`` to ``new`` amounts to (maybe none).

    Order as upstream: spec.unschedulable (reported as ``UpdateNodeTaint``), allocatable,
    labels, taints, conditions (each type's status), annotations, ``spec.podPreemptionPolicy``
    (v1.37, :func:`~kubesched.framework.events.preemption_policy`), declared features (v1.35+
    with NodeDeclaredFeatures; a v1.34 API server has no such field, so it never changes
    there).
    """
    actions: list[ActionType] = []
    if new.unschedulable != old.unschedulable and not new.unschedulable:
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if new.allocatable != old.allocatable:
        actions.append(ActionType.UPDATE_NODE_ALLOCATABLE)
    if new.labels != old.labels:
        actions.append(ActionType.UPDATE_NODE_LABEL)
    if new.taints != old.taints:
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if _condition_statuses(new) != _condition_statuses(old):
        actions.append(ActionType.UPDATE_NODE_CONDITION)
    if new.annotations != old.annotations:
        actions.append(ActionType.UPDATE_NODE_ANNOTATION)
    if preemption_policy(new) != preemption_policy(old):
        actions.append(ActionType.UPDATE_NODE_PREEMPTION_POLICY)
    if new.declared_features != old.declared_features:
        actions.append(ActionType.UPDATE_NODE_DECLARED_FEATURE)
    return [ClusterEvent(Resource.NODE, a) for a in actions]


def _condition_statuses(node: api.Node) -> dict[Any, Any]:
    """Upstream's ``extractNodeConditionsChange`` view: each ``status.conditions[]`` type's
    status (the last of a type wins), from the object ``node`` was parsed from."""
    status = node.raw.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return {}
    return {c.get("type"): c.get("status") for c in conditions if isinstance(c, dict)}
