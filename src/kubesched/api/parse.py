"""Read cluster manifests (YAML or JSON, one or many documents, ``List`` kinds) into objects.

Field paths in errors name a place in the *stream* of documents:

- a stream with one document is its own root: ``items[3].spec.containers[0]`` for the
  ``kubectl get nodes,pods -A -o json`` List, ``spec.containers[0]`` for a lone Pod;
- in a stream of several documents the document index comes first: ``[2].spec...`` and,
  for a List inside it, ``[2].items[3].spec...``.  A file whose only document is a
  sequence (JSON ``[...]`` or YAML ``- ...``) is such a stream.

:func:`split_documents` flattens Lists and records these paths in a :class:`Documents`
list; :func:`parse_objects` uses them (a plain list gets the same scheme).

Files are read and decoded by :mod:`kubesched.api.source`, the one reader every command
uses (regular files only, size and nesting limits, strict YAML/JSON).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import fields as f
from kubesched.api import listitems, nodefeatures, podquick, resource, source, storage, workload
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.fields import join
from kubesched.api.pods import parse_pod
from kubesched.api.quantity import units_from_milli

__all__ = [
    "SYSTEM_PRIORITY_CLASSES",
    "Documents",
    "ParsedObjects",
    "load_cluster",
    "load_documents",
    "parse_node",
    "parse_objects",
    "parse_pod",
    "resolve_priorities",
    "split_documents",
]

MAX_PROBLEMS = 50
"""At most this many problems are collected before :func:`parse_objects` gives up."""

SYSTEM_PRIORITY_CLASSES = api.SYSTEM_PRIORITY_CLASSES
"""PriorityClasses every API server has (:data:`kubesched.api.objects.SYSTEM_PRIORITY_CLASSES`)."""


class Documents(list[dict[str, Any]]):
    """Objects of a manifest stream in order, with ``paths[i]`` the field path of object ``i``."""

    paths: list[str]

    def __init__(self) -> None:
        super().__init__()
        self.paths = []


@dataclass(slots=True)
class ParsedObjects:
    """The objects of a snapshot: Nodes and Pods parsed, every other kind kept as a dict."""

    nodes: list[api.Node] = field(default_factory=list)
    pods: list[api.Pod] = field(default_factory=list)
    others: list[dict[str, Any]] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """The ``others`` of one ``kind`` (``PodGroup``, ``PriorityClass``, ...), in file order."""
        return [o for o in self.others if o.get("kind") == kind]


def load_documents(path: str) -> list[dict[str, Any]]:
    """Every object in the YAML/JSON file at ``path``, Lists flattened (a :class:`Documents`);
    the file is read by :mod:`kubesched.api.source` (its limits and strictness)."""
    docs = source.load_file(path)
    if len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]  # a top-level sequence is a stream of objects
    try:
        return split_documents(docs)
    except InputError as err:
        raise err.with_file(path) from None


def split_documents(docs: Sequence[Any]) -> Documents:
    """Flatten ``List`` kinds (``List``, ``PodList``, ``NodeList``, ... with ``items``) into
    their items and name each object's path (see the module docstring)."""
    out = Documents()
    single = len(docs) == 1
    for k, doc in enumerate(docs):
        prefix = "" if single else f"[{k}]"
        f.document(doc, prefix or "document")
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
            for i, item in enumerate(f.seq(doc, "items", prefix)):
                ipath = join(join(prefix, "items"), i)
                f.document(item, ipath)
                out.append(item)
                out.paths.append(ipath)
        else:
            out.append(doc)
            out.paths.append(prefix)
    return out


def parse_node(obj: dict[str, Any], path: str = "") -> api.Node:
    """A Node from its manifest; allocatable is ``status.allocatable``, or ``status.capacity``
    when the node reports no allocatable at all (the API server's ``SetDefaults_NodeStatus``)."""
    node = f.as_mapping(obj, path)
    meta_path = join(path, "metadata")
    meta = f.mapping(node, "metadata", path)
    spec_path = join(path, "spec")
    spec = f.mapping(node, "spec", path)
    status_path = join(path, "status")
    status = f.mapping(node, "status", path)
    alloc = f.resource_list(status, "allocatable", status_path)
    if alloc is None:
        alloc = f.resource_list(status, "capacity", status_path) or {}
    taints = tuple(
        f.taint(f.as_mapping(t, p), p)
        for i, t in enumerate(f.seq(spec, "taints", spec_path))
        for p in (join(join(spec_path, "taints"), i),)
    )
    images = []
    for i, img in enumerate(f.seq(status, "images", status_path)):
        ipath = join(join(status_path, "images"), i)
        img = f.as_mapping(img, ipath)
        size = f.integer(img, "sizeBytes", ipath)
        images.append(api.ImageState(f.string_list(img, "names", ipath), size or 0))
    return api.Node(
        name=f.required_string(meta, "name", meta_path),
        labels=f.string_map(meta, "labels", meta_path),
        annotations=f.string_map(meta, "annotations", meta_path),
        unschedulable=f.boolean(spec, "unschedulable", spec_path),
        taints=taints,
        allocatable={n: units_from_milli(n, m) for n, m in alloc.items()},
        images=tuple(images),
        declared_features=nodefeatures.declared_features(status, status_path),
        resize_preemption_disabled=_resize_preemption_disabled(spec, spec_path),
        raw=obj,
    )


def _resize_preemption_disabled(spec: Mapping[str, Any], path: str) -> bool:
    """Whether ``spec.podPreemptionPolicy.disableResizePreemption`` names anyone (v1.37)."""
    policy = f.mapping(spec, "podPreemptionPolicy", path)
    return bool(f.string_list(policy, "disableResizePreemption", join(path, "podPreemptionPolicy")))


@dataclass(frozen=True, slots=True)
class _PriorityClass:
    value: int
    global_default: bool = False
    preemption_policy: str = ""


class _PriorityTable:
    """PriorityClass values by name, with the built-in system classes and the global default."""

    def __init__(self) -> None:
        self.classes = {n: _PriorityClass(v) for n, v in SYSTEM_PRIORITY_CLASSES.items()}
        self.default: _PriorityClass | None = None

    def add(self, obj: Mapping[str, Any], path: str) -> None:
        name = f.required_string(f.mapping(obj, "metadata", path), "name", join(path, "metadata"))
        value = f.int32(obj, "value", path)
        if value is None:
            f.fail(join(path, "value"), "Required value")
        pc = _PriorityClass(
            value, f.boolean(obj, "globalDefault", path), f.string(obj, "preemptionPolicy", path)
        )
        self.classes[name] = pc
        # Upstream admission picks the lowest value if several claim to be the default.
        if pc.global_default and (self.default is None or pc.value < self.default.value):
            self.default = pc

    def resolve(self, pod: api.Pod, given: tuple[bool, bool] | None = None) -> str | None:
        """Fill ``pod.priority`` unless ``spec.priority`` was set; an error message or None.
        ``given``: whether ``spec.priority`` and ``spec.preemptionPolicy`` are set, when
        known (else read from ``pod.raw``)."""
        if given is None:
            spec = pod.raw.get("spec") or {}
            given = (spec.get("priority") is not None, spec.get("preemptionPolicy") is not None)
        priority_given, policy_given = given
        if priority_given:
            return None
        if pod.priority_class_name:
            pc = self.classes.get(pod.priority_class_name)
            if pc is None:
                return f"no PriorityClass with name {pod.priority_class_name} was found"
        elif self.default is not None:
            pc = self.default
        else:
            pod.priority = 0
            return None
        pod.priority = pc.value
        if not policy_given and pc.preemption_policy:
            pod.preemption_policy = pc.preemption_policy
        return None


def resolve_priorities(
    pods: Iterable[api.Pod], priority_classes: Iterable[Mapping[str, Any]]
) -> None:
    """Set each Pod's priority (and preemption policy) from its PriorityClass, as the priority
    admission plugin would, unless its manifest has ``spec.priority``.  Raises InputError for
    a ``priorityClassName`` that names no class (the API server would refuse the Pod)."""
    table = _PriorityTable()
    for i, pc in enumerate(priority_classes):
        table.add(pc, f"PriorityClass[{i}]")
    problems = []
    for pod in pods:
        message = table.resolve(pod)
        if message:
            problems.append((f"Pod {pod.key}: spec.priorityClassName", message))
    if problems:
        raise InputError(problems)


def _identity(obj: Mapping[str, Any], kind: str, path: str) -> tuple[str, str, str]:
    meta = obj.get("metadata")
    if type(meta) is dict:  # the common case, without building paths
        name, namespace = meta.get("name"), meta.get("namespace")
        if type(name) is str and name and (namespace is None or type(namespace) is str):
            if kind == "Node":
                return kind, "", name
            return kind, namespace or ("default" if kind == "Pod" else ""), name
    meta_path = join(path, "metadata")
    meta = f.mapping(obj, "metadata", path)
    name = f.required_string(meta, "name", meta_path)
    namespace = "" if kind == "Node" else f.string(meta, "namespace", meta_path)
    if kind == "Pod" and not namespace:
        namespace = "default"
    return kind, namespace, name


def with_priority_classes(docs: Documents, cluster_docs: Sequence[dict[str, Any]]) -> Documents:
    """The Pods' documents plus the snapshot's PriorityClasses they do not declare
    themselves, appended (so error paths keep their indexes): a Pod may name a class the
    cluster has."""
    own = {d.get("metadata", {}).get("name") for d in docs if d.get("kind") == "PriorityClass"}
    for d in cluster_docs:
        if d.get("kind") == "PriorityClass" and d.get("metadata", {}).get("name") not in own:
            docs.append(d)
            docs.paths.append("cluster")
    return docs


def parse_objects(
    docs: Sequence[dict[str, Any]], file: str | None = None, *, admit: bool = True
) -> ParsedObjects:
    """Nodes, Pods and the other kinds of a document stream; priorities resolved from the
    stream's PriorityClasses (as the priority admission plugin does; with ``admit`` False
    only checked: a ``priorityClassName`` must name a class, and the Pods keep
    ``spec.priority`` or 0, as ``explain`` asks upstream's framework, which admits nothing).
    All problems (up to :data:`MAX_PROBLEMS`) are reported in one :class:`InputError`
    carrying ``file``; duplicate kind + namespace/name is an error."""
    with source.bulk_allocation():
        return _parse_objects(docs, file, admit)


def _parse_objects(docs: Sequence[dict[str, Any]], file: str | None, admit: bool) -> ParsedObjects:
    if not isinstance(docs, Documents):
        docs = split_documents(docs)
    gathered = _Gathered()
    for obj, path in zip(docs, docs.paths, strict=True):
        if len(gathered.problems) >= MAX_PROBLEMS:
            break
        gathered.add(obj, path)
    return gathered.parsed(file, admit)


class _Gathered:
    """What :func:`parse_objects` gathers from a stream of objects, one at a time."""

    def __init__(self) -> None:
        self.out = ParsedObjects()
        self.problems: list[tuple[str, str]] = []
        self.seen: dict[tuple[str, str, str], str] = {}
        self.pod_paths: list[str] = []
        self.given: list[tuple[bool, bool] | None] = []  # see _PriorityTable.resolve
        self.table = _PriorityTable()

    def add(self, obj: dict[str, Any], path: str) -> None:
        """Parse the object ``obj`` at ``path``; its problems are kept."""
        try:
            kind = obj.get("kind")
            if type(kind) is not str or not kind:  # the common case checked without a call
                kind = f.required_string(obj, "kind", path)
            ident = _identity(obj, kind, path)
            if kind == "PodGroup" and workload.is_workload_api(obj):
                ident = (f"{kind}.{workload.GROUP}", ident[1], ident[2])  # not Coscheduling's
            self._first(ident, path)
            if kind == "Pod":
                self.out.pods.append(podquick.parse_pod(obj, path))
                self.pod_paths.append(path)
                self.given.append(None)
            elif kind == "Node":
                self.out.nodes.append(parse_node(obj, path))
            else:
                if kind == "PriorityClass":
                    self.table.add(obj, path)
                elif kind in resource.KINDS:
                    resource.validate(obj, path)
                elif kind in storage.KINDS:
                    storage.validate(obj, path)
                elif workload.is_workload_api(obj):
                    workload.validate(obj, path)
                self.out.others.append(obj)
        except InputError as err:
            self.problems.extend(err.problems)

    def add_pod(self, pod: api.Pod, path: str, given: tuple[bool, bool]) -> None:
        """Take ``pod``, already parsed from the object at ``path`` (``given``: see
        :meth:`_PriorityTable.resolve`)."""
        try:
            self._first(("Pod", pod.namespace, pod.name), path)
        except InputError as err:
            self.problems.extend(err.problems)
            return
        self.out.pods.append(pod)
        self.pod_paths.append(path)
        self.given.append(given)

    def _first(self, ident: tuple[str, str, str], path: str) -> None:
        """Note the object ``ident`` (kind, namespace, name) at ``path``: an error if seen."""
        first = self.seen.get(ident)
        if first is not None:
            kind, namespace, name = ident
            shown = f"{namespace}/{name}" if namespace else name
            f.fail(
                join(path, "metadata.name"),
                f"duplicate {kind} {shown} (first at {first or 'the root'})",
            )
        self.seen[ident] = path

    def parsed(self, file: str | None, admit: bool = True) -> ParsedObjects:
        """The objects, priorities resolved (only checked unless ``admit``: see
        :func:`parse_objects`); :class:`InputError` with every problem."""
        problems = self.problems
        if not problems:
            pods = zip(self.out.pods, self.pod_paths, self.given, strict=True)
            for pod, path, given in pods:
                if not pod.priority_class_name and self.table.default is None:
                    continue  # nothing to resolve: the parse gave spec.priority or 0 already
                message = self.table.resolve(pod if admit else pod.shallow_copy(), given)
                if message:
                    problems.append((join(path, "spec.priorityClassName"), message))
        if problems:
            raise InputError(problems[:MAX_PROBLEMS], file=file)
        return self.out


def load_cluster(path: str) -> ParsedObjects:
    """:func:`load_documents` then :func:`parse_objects`, errors naming ``path``.  A large
    ``kubectl`` List is read by parts (:mod:`~kubesched.api.listitems`, its Pods from their
    text by :func:`~kubesched.api.podquick.quick_pod`): the same objects, without a dict
    for most Pods; any problem in it (a repeated key, an invalid object) sends it the usual
    way, which names the problem."""
    with source.bulk_allocation():
        by_parts = listitems.list_items(path)
        if by_parts is not None:
            try:
                parsed = _parse_items(by_parts.items)
            finally:
                exact = by_parts.exact()
            if parsed is not None and exact:
                return parsed
        return parse_objects(load_documents(path), file=path)


def _parse_items(items: Sequence[Any]) -> ParsedObjects | None:
    """The objects of a List's undecoded ``items``; None on any problem."""
    gathered = _Gathered()
    sections = podquick.Sections()
    for i, item in enumerate(items):
        path = f"items[{i}]"
        quick = podquick.quick_pod(item, sections)
        if quick is not None:
            gathered.add_pod(quick.pod, path, quick.given)
        else:
            obj = listitems.mapping(item)
            if obj is None:
                return None
            gathered.add(obj, path)
        if gathered.problems:
            return None
    try:
        return gathered.parsed(None)
    except InputError:
        return None
