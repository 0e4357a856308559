"""``updateAny``: objects replaced from a template, at once or at a rate (upstream ``update.go``).

Upstream renders ``templatePath`` with ``{"Index": i, "Count": n}`` for each of ``count``
objects (default 1) and writes each with an ``Update`` (of ``subresources`` when given, e.g.
Pod ``resize``) followed by an ``UpdateStatus``; ``updatePerSecond`` > 0 writes one per tick
of a ticker of that rate, 0 all at once.  The op returns when every object is written.  The
namespace must be set for a namespaced kind and empty for a cluster-scoped one.

What the two writes leave, as kubesched applies it in one replace:

- a **Pod** takes its metadata, spec and status from the template; its uid, creation time
  and (once bound) ``nodeName`` stay, as the API server keeps them;
- a Pod through the ``resize`` subresource changes only its containers' resources: each
  container of the template (matched by name) gives its ``resources``, the rest stays;
- a **Node** takes metadata, spec and status from the template (its
  ``kubernetes.io/hostname`` label too: a label created with the Node and missing from the
  template is gone, as through kube-apiserver);
- any other kind is replaced as it is.

Writing an object that does not exist fails the workload (upstream: 404).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_node, parse_pod
from kubesched.bench import objects
from kubesched.bench.loop import WorkloadError
from kubesched.sim.apiserver import SimApiServer

RESIZE = "resize"
SUBRESOURCES = (RESIZE,)
"""The subresources kubesched applies (upstream's configs use only Pod ``resize``)."""


@dataclass(frozen=True, slots=True)
class UpdateAny:
    """``updateAny``: ``count`` objects from ``template`` in ``namespace`` ("" = cluster
    scope), ``per_second`` of them a second (0: all at once), through ``subresources``."""

    index: int
    template: str
    namespace: str = ""
    count: int = 1
    per_second: int = 0
    subresources: tuple[str, ...] = ()


def documents(step: UpdateAny, names: objects.Names) -> list[dict[str, Any]]:
    """The ``count`` rendered manifests, named and placed by the op's namespace."""
    manifest = objects.Manifest(step.template)
    out = []
    for i in range(step.count):
        try:
            doc = objects.make_object(
                manifest.document(i, step.count),
                step.namespace,
                names,
                lambda kind, ns, name: False,
                step.template,
            )
        except InputError as err:
            raise WorkloadError(str(err)) from None
        out.append(doc)
    return out


def update(api_server: SimApiServer, doc: dict[str, Any], subresources: Sequence[str]) -> None:
    """Replace the object ``doc`` names with it (module docstring); :class:`WorkloadError`
    when it does not exist or a subresource is not one kubesched applies."""
    unknown = [s for s in subresources if s not in SUBRESOURCES]
    kind, meta = str(doc["kind"]), doc["metadata"]
    if unknown or (subresources and kind != "Pod"):
        raise WorkloadError(f"updateAny: subresources {list(subresources)} of {kind} not modelled")
    name, ns = str(meta["name"]), str(meta.get("namespace", ""))
    if kind == "Pod":
        old = api_server.pods.get(f"{ns}/{name}")
        if old is None:
            raise WorkloadError(
                f'failed to update object in namespace "{ns}": pod {name} not found'
            )
        api_server.update_pod(_resized(old, doc) if subresources else _replaced(old, doc))
    elif kind == "Node":
        if name not in api_server.nodes:
            raise WorkloadError(f'failed to update object: nodes "{name}" not found')
        api_server.update_node(parse_node(doc))
    else:
        api_server.update_object(doc)


def _replaced(old: api.Pod, doc: dict[str, Any]) -> api.Pod:
    new = parse_pod(doc)
    new.uid, new.creation_timestamp = old.uid, old.creation_timestamp
    if old.node_name:  # immutable once bound
        new.node_name = old.node_name
    return new


def _resized(old: api.Pod, doc: dict[str, Any]) -> api.Pod:
    """``old`` with the container resources of ``doc`` (the ``resize`` subresource)."""
    raw = copy.deepcopy(old.raw)
    wanted = {
        c.get("name"): c.get("resources")
        for c in (doc.get("spec") or {}).get("containers") or ()
        if isinstance(c, dict)
    }
    for c in (raw.get("spec") or {}).get("containers") or ():
        if c.get("name") in wanted:
            c["resources"] = copy.deepcopy(wanted[c["name"]])
    parsed = parse_pod(raw)
    new = old.shallow_copy()
    new.requests, new.nonzero_requests = parsed.requests, parsed.nonzero_requests
    new.fit_score_requests = parsed.fit_score_requests
    new.raw = raw
    return new


class UpdateAtRate:
    """``updatePerSecond`` > 0: one object per tick (missed ticks dropped, as a Go ticker)."""

    def __init__(
        self,
        api_server: SimApiServer,
        docs: list[dict[str, Any]],
        subresources: Sequence[str],
        period: float,
        now: float,
    ) -> None:
        self.api, self.docs, self.subresources = api_server, list(reversed(docs)), subresources
        self.period = period
        self.due = now + period

    @property
    def left(self) -> int:
        return len(self.docs)

    def tick(self, now: float) -> bool:
        if self.docs:
            update(self.api, self.docs.pop(), self.subresources)
        while self.due <= now:
            self.due += self.period
        return bool(self.docs)
