"""The nominator: Pods nominated to a node by preemption, by node (upstream ``nominator``).

Upstream ``pkg/scheduler/backend/queue/nominator.go``.  After a successful preemption the
preemptor is *nominated* to the node its victims are leaving; until it is bound (or deleted,
or its nomination cleared) the Filter phase treats it as running on that node for every Pod
of lower or equal priority (``RunFilterPluginsWithNominatedPods``), so the room preemption
made is not taken by someone else.

The scheduling queue keeps one: ``add`` follows a Pod's ``status.nominatedNodeName`` when it
enters activeQ, ``update`` keeps an in-memory nomination across updates that carry none
(upstream ``UpdateNominatedPod``), ``delete`` drops it when the Pod is deleted, bound or
assumed.  Nominations are few (one per pending preemptor), so everything here is a dict
operation; the Filter phase asks only for the nodes that have any.

Every change is journalled by node (:meth:`Nominator.changed_since`),
so what readers derive from the nominations (the Filter phase's array set, preemption's kept
dry-run results) is brought up to date node by node instead of rebuilt.
"""

from __future__ import annotations

from collections.abc import Collection

from kubesched.api import objects as api
from kubesched.state.journal import ChangeJournal

JOURNAL = 4096
"""Changes kept for :meth:`Nominator.changed_since`; a reader further behind rebuilds."""


class Nominator:
    """Nominated Pods by node name, and each Pod's nominated node."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, api.Pod]] = {}
        self._node_of: dict[str, str] = {}
        self._journal: ChangeJournal[str] = ChangeJournal(JOURNAL)
        """The node of each change."""

    def __len__(self) -> int:
        return len(self._node_of)

    def add(self, pod: api.Pod, node_name: str | None = None) -> None:
        """Nominate ``pod`` to ``node_name`` (upstream ``ModeOverride``; ``""`` clears it).

        With ``node_name`` None the Pod's own ``nominated_node_name`` is used (upstream
        ``ModeNoop``).  A bound Pod is never nominated.
        """
        node = pod.nominated_node_name if node_name is None else node_name
        self.delete(pod.key)
        if not node or pod.node_name:
            return
        self._node_of[pod.key] = node
        self._by_node.setdefault(node, {})[pod.key] = pod
        self._touch(node)

    def update(self, old: api.Pod, new: api.Pod) -> None:
        """Upstream ``UpdateNominatedPod``: an update that carries no nomination on either
        side keeps the nomination made in memory; otherwise ``new``'s own nomination wins."""
        keep = None
        if not old.nominated_node_name and not new.nominated_node_name:
            keep = self._node_of.get(old.key)
        self.delete(old.key)
        self.add(new, keep)

    def delete(self, pod_key: str) -> None:
        """Forget the nomination of the Pod with ``pod_key`` (no error if it has none)."""
        node = self._node_of.pop(pod_key, None)
        if node is None:
            return
        self._touch(node)
        pods = self._by_node[node]
        pods.pop(pod_key, None)
        if not pods:
            del self._by_node[node]

    @property
    def version(self) -> int:
        """Bumped on every change, so readers can cache what they derive."""
        return self._journal.version

    def _touch(self, node: str) -> None:
        self._journal.add(node)

    def changed_since(self, version: int) -> list[str] | None:
        """The nodes whose nominations changed after ``version`` (an earlier value of
        :attr:`version`), each once in the order of their first change, or None when the
        journal no longer reaches back that far."""
        nodes = self._journal.since(version)
        if nodes is None or len(nodes) < 2:  # a copy of none or one node: no repeats
            return nodes if nodes is None else list(nodes)
        return list(dict.fromkeys(nodes))

    def node_of(self, pod_key: str) -> str:
        """The node the Pod is nominated to, or ``""``."""
        return self._node_of.get(pod_key, "")

    def nominated_pods_for_node(self, node_name: str) -> list[api.Pod]:
        """Pods nominated to ``node_name``, in nomination order."""
        pods = self._by_node.get(node_name)
        return list(pods.values()) if pods else []

    def nominated_node_names(self) -> Collection[str]:
        """Names of the nodes that have at least one nominated Pod."""
        return self._by_node.keys()
