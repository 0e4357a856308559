"""Writing objects of any kind, and the ops that keep running in the background.

:class:`Writer` creates and deletes what ``createAny`` and ``churn`` templates describe:
Pods and Nodes are parsed and go through the API server's Pod and Node paths (so the
scheduler sees them), every other kind is kept as an object (Namespaces, Services,
PodDisruptionBudgets reach the scheduler through ``on_object``).

:class:`Churn` (upstream ``churnOp``) and :class:`DeleteAtRate` (``deletePods`` with
``deletePodsPerSecond``) are :class:`~kubesched.bench.loop.Background` tasks: the loop calls
``tick`` when ``due``, between scheduling cycles.  As a Go ticker, a tick missed while the
loop was busy is dropped, not made up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api import objects as api
from kubesched.api.parse import parse_node, parse_pod
from kubesched.bench import objects
from kubesched.bench import params as p
from kubesched.bench.loop import WorkloadError
from kubesched.sim.apiserver import SimApiServer, object_key


class Writer:
    """Creates and deletes objects of any kind through the API server."""

    def __init__(self, api_server: SimApiServer, names: objects.Names) -> None:
        self.api = api_server
        self.names = names

    def exists(self, kind: str, ns: str, name: str) -> bool:
        """Whether an object of ``kind`` named ``ns/name`` exists (a generated name clashes)."""
        if kind == "Pod":
            return f"{ns}/{name}" in self.api.pods
        if kind == "Node":
            return name in self.api.nodes
        return object_key(kind, ns, name) in self.api.objects

    def create_any(self, doc: dict[str, Any]) -> str:
        """Create a manifest of any kind (Pods and Nodes are parsed); returns its name."""
        kind, name = doc["kind"], doc["metadata"]["name"]
        if kind == "Pod":
            pod = parse_pod(doc)
            pod.uid = self.names.uid()
            self.create(self.api.create_pod, pod)
        elif kind == "Node":
            node = parse_node(doc)
            node.labels.setdefault(objects.HOSTNAME_LABEL, node.name)
            self.create(self.api.create_node, node)
        else:
            self.create(self.api.create_object, doc)
        return str(name)

    def delete_any(self, doc: dict[str, Any], name: str) -> None:
        """Delete an object :meth:`create_any` made from ``doc``."""
        kind, ns = doc["kind"], doc["metadata"].get("namespace", "")
        if kind == "Pod":
            pod = self.api.pods.get(f"{ns}/{name}")
            if pod is not None:
                self.api.delete_pod(pod)
        elif kind == "Node":
            self.api.delete_node(name)
        else:
            self.api.delete_object(kind, ns, name)

    @staticmethod
    def create(fn: Callable[[Any], None], obj: Any) -> None:
        """``fn(obj)``; a refused write (409, a watcher fault) becomes :class:`WorkloadError`."""
        try:
            fn(obj)
        except Exception as err:  # ApiError (409) or a watcher fault: the op fails
            raise WorkloadError(str(err)) from err


class DeleteAtRate:
    """``deletePods`` at ``deletePodsPerSecond``: one Pod per tick (missed ticks dropped)."""

    def __init__(
        self, api_server: SimApiServer, pods: list[api.Pod], period: float, now: float
    ) -> None:
        self.api, self.pods, self.period = api_server, list(reversed(pods)), period
        self.due = now + period

    @property
    def left(self) -> int:
        return len(self.pods)

    def tick(self, now: float) -> bool:
        if self.pods:
            self.api.delete_pod(self.pods.pop())
        while self.due <= now:
            self.due += self.period
        return bool(self.pods)


class Churn:
    """``churn``: each tick creates one object per template (``create``), or alternately
    creates and deletes them in ``number`` slots (``recreate``)."""

    def __init__(
        self, writer: Writer, step: p.Churn, docs: list[tuple[str, dict[str, Any]]], now: float
    ) -> None:
        self.writer, self.step, self.docs = writer, step, docs
        self.due = now + step.interval
        self.count = 0
        self.slots: list[list[str]] = [[""] * max(step.number, 1) for _ in docs]

    def tick(self, now: float) -> bool:
        step, run = self.step, self.writer
        for i, (path, doc) in enumerate(self.docs):
            slot = self.count % max(step.number, 1)
            if step.mode == "recreate" and self.slots[i][slot]:
                run.delete_any(self._placed(doc), self.slots[i][slot])
                self.slots[i][slot] = ""
                continue
            try:
                obj = objects.make_object(
                    doc, step.namespace, run.names, run.exists, path, strict_scope=False
                )
                name = run.create_any(obj)
            except WorkloadError:
                name = ""  # upstream ignores a failed churn create
            if step.mode == "recreate":
                self.slots[i][slot] = name
        self.count += 1
        while self.due <= now:
            self.due += step.interval
        return step.mode == "recreate" or not step.number or self.count < step.number

    def _placed(self, doc: dict[str, Any]) -> dict[str, Any]:
        kind = str(doc.get("kind", ""))
        ns = "" if kind in objects.CLUSTER_SCOPED else self.step.namespace
        return {"kind": kind, "metadata": {"namespace": ns}}
