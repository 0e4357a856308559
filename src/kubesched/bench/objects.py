"""Nodes, Pods and other objects made from scheduler_perf templates.

Each template file is read once.  A template with Go template actions is rendered per object
with ``{"Index": i, "Count": n}`` plus the op's ``templateParams``; a static one (every file of
the public set) is parsed once and each object is a cheap copy of the parsed one, which keeps
object creation out of the way of a 50,000-Pod measurement.  Objects made from a static
template share its parsed manifest as ``raw``.

Names follow the API server: ``metadata.name`` when the template has one, else
``generateName`` plus 5 random characters from Kubernetes' alphabet (``utilrand.String``:
lowercase consonants and digits), drawn from a seeded generator and redrawn on a clash.
Nodes get ``kubernetes.io/hostname=<name>`` unless the template sets it.  Pods of a
``createPods`` op with a template get upstream's ``signature`` label
(``signature-label-<index / signatureBatchSize>``).  Without a template, upstream's base Node
and base Pod are used (:func:`base_node`, :func:`base_pod`).  The volume fields make a
CSINode per Node (:func:`csinode`) and each Pod's bound claim and volume (:class:`VolumeMaker`).
"""

from __future__ import annotations

import copy
import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesched.api import objects as api
from kubesched.api import source
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_node, parse_pod
from kubesched.bench import gotemplate
from kubesched.bench.gofuncs import go_data

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""``k8s.io/apimachinery/pkg/util/rand`` characters: no vowels, no confusable digits."""
RANDOM_LENGTH = 5
"""Random characters of a generated name (:meth:`Names.generate` draws them one by one)."""
_ALPHABET_SIZE = float(len(NAME_ALPHABET))
HOSTNAME_LABEL = "kubernetes.io/hostname"
SIGNATURE_LABEL = "signature"
CLUSTER_SCOPED = frozenset(
    (
        "Node",
        "Namespace",
        "PriorityClass",
        "PersistentVolume",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "DeviceClass",
        "ResourceSlice",
        "DeviceTaintRule",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
    )
)
"""Kinds created without a namespace; every other kind is namespaced."""

Obj = dict[str, Any]
"""A manifest as a mapping."""
Exists = Callable[[str], bool]
"""Whether a name is taken (the API server would answer 409)."""


class Names:
    """Generated names and UIDs from one seeded generator."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self._uids = itertools.count(1)

    def generate(self, prefix: str, exists: Exists) -> str:
        """``prefix`` + 5 random characters, redrawn while ``exists(name)``: the draws of
        ``rng.choices(NAME_ALPHABET, k=5)``, written out (a third of the time; one name
        per Pod created in a measured phase)."""
        r, a, n = self.rng.random, NAME_ALPHABET, _ALPHABET_SIZE
        while True:
            name = prefix + a[int(r() * n)] + a[int(r() * n)] + a[int(r() * n)]
            name += a[int(r() * n)] + a[int(r() * n)]
            if not exists(name):
                return name

    def uid(self) -> str:
        """A fresh UID."""
        return f"bench-{next(self._uids):08d}"


class Manifest:
    """One template file, read and parsed once."""

    def __init__(self, path: str, params: Mapping[str, Any] | None = None) -> None:
        text = source.read_text(path)
        self.path = path
        self.params = go_data(dict(params or {}))
        self.template = gotemplate.parse(text, source=path)
        self._static: dict[str, Any] | None = self._load(text) if self.template.static else None

    @property
    def static(self) -> bool:
        """True when every object made from it is the same manifest."""
        return self._static is not None

    def document(self, index: int = 0, count: int = 1) -> dict[str, Any]:
        """The manifest for object ``index`` of ``count`` (a fresh dict; callers may edit)."""
        if self._static is not None:
            return copy.deepcopy(self._static)
        env = {**self.params, "Index": index, "Count": count}
        return self._load(self.template.render(env))

    def _load(self, text: str) -> dict[str, Any]:
        docs = source.load_text(text, self.path)
        doc = docs[0] if len(docs) == 1 else None
        if not isinstance(doc, dict):
            raise InputError("a template must hold one object (a mapping)", file=self.path)
        return doc


def _name_of(meta: Mapping[str, Any], names: Names, exists: Exists, path: str) -> str:
    if meta.get("name"):
        return str(meta["name"])
    prefix = meta.get("generateName")
    if not prefix:
        raise InputError("metadata.name or metadata.generateName is required", file=path)
    return names.generate(str(prefix), exists)


class PodMaker:
    """Pods of one op in ``namespace``; ``signature_batch`` > 0 adds the signature label."""

    def __init__(
        self,
        manifest: Manifest | None,
        namespace: str,
        names: Names,
        exists: Exists,
        signature_batch: int = 0,
        mark: Callable[[api.Pod, Obj], None] | None = None,
    ) -> None:
        self.manifest = manifest
        self.namespace = namespace
        self.names = names
        self.exists = exists
        self.signature_batch = signature_batch
        self.mark = mark
        """Called with each parsed Pod and its manifest (once for a static template)."""
        self._base: api.Pod | None = None
        self._path = manifest.path if manifest is not None else "<base pod>"
        if manifest is None or manifest.static:
            doc = manifest.document() if manifest is not None else base_pod()
            meta = doc.setdefault("metadata", {}) or {}
            doc["metadata"] = {
                **meta,
                "name": meta.get("name") or "template",
                "namespace": namespace,
            }
            self._base = self._parse(doc)
            self._base.raw = doc
            self._meta = meta

    def _parse(self, doc: dict[str, Any]) -> api.Pod:
        try:
            pod = parse_pod(doc)
        except InputError as err:
            raise err.with_file(self._path) from None
        if self.mark is not None:
            self.mark(pod, doc)
        return pod

    def make(self, index: int, count: int) -> api.Pod:
        """Pod ``index`` of ``count``."""
        ns = self.namespace
        if self._base is not None:
            pod = self._base.shallow_copy()
            pod.rename(_name_of(self._meta, self.names, self.exists, self._path))
            pod.labels = dict(pod.labels)
        else:
            assert self.manifest is not None
            doc = self.manifest.document(index, count)
            meta = doc.get("metadata") or {}
            name = _name_of(meta, self.names, self.exists, self._path)
            doc["metadata"] = {**meta, "name": name, "namespace": ns}
            pod = self._parse(doc)
        pod.uid = self.names.uid()
        if self.signature_batch > 0:
            pod.labels[SIGNATURE_LABEL] = f"signature-label-{index // self.signature_batch}"
        return pod


class NodeMaker:
    """Nodes of one op; ``default_prefix`` names them when the template has no name at all."""

    def __init__(
        self,
        manifest: Manifest | None,
        names: Names,
        exists: Exists,
        default_prefix: str,
        allocatable: Mapping[str, str] | None = None,
    ) -> None:
        self.manifest = manifest
        self.names = names
        self.exists = exists
        self.default_prefix = default_prefix
        self.allocatable = dict(allocatable or {})
        """Added to each Node's ``status.allocatable`` (``nodeAllocatableStrategy``)."""
        self._base: api.Node | None = None
        self._meta: dict[str, Any] = {}
        if manifest is None or manifest.static:
            doc = manifest.document() if manifest is not None else base_node()
            self._meta = dict(doc.get("metadata") or {})
            doc["metadata"] = {**self._meta, "name": "template"}
            self._base = self._parse(doc)

    def _parse(self, doc: dict[str, Any]) -> api.Node:
        if self.allocatable:  # as the API server defaults it, then upstream's patch
            status = doc.setdefault("status", {})
            allocatable = dict(status.get("allocatable") or status.get("capacity") or {})
            status["allocatable"] = {**allocatable, **self.allocatable}
        try:
            return parse_node(doc)
        except InputError as err:
            raise err.with_file(self.manifest.path if self.manifest else "<base node>") from None

    def _name(self, meta: Mapping[str, Any]) -> str:
        if not meta.get("name") and not meta.get("generateName"):
            meta = {**meta, "generateName": self.default_prefix}
        path = self.manifest.path if self.manifest else "<base node>"
        return _name_of(meta, self.names, self.exists, path)

    def make(self, index: int, count: int) -> api.Node:
        """Node ``index`` of ``count``."""
        if self._base is not None:
            node = copy.copy(self._base)
            node.name = self._name(self._meta)
            node.labels = dict(node.labels)
        else:
            assert self.manifest is not None
            doc = self.manifest.document(index, count)
            meta = doc.get("metadata") or {}
            doc["metadata"] = {**meta, "name": self._name(meta)}
            node = self._parse(doc)
        node.labels.setdefault(HOSTNAME_LABEL, node.name)
        return node


MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
"""The CSINode annotation listing the in-tree plugins migrated to CSI on the node."""


def csinode(node: str, drivers: Mapping[str, Mapping[str, Any]], migrated: Sequence[str]) -> Obj:
    """The CSINode upstream's ``NodeAllocatableStrategy`` creates for ``node``: one entry
    per driver with its ``allocatable`` (``{"count": N}``), and the migrated plugins."""
    entries = [
        {"name": name, "nodeID": node, "allocatable": dict(alloc)}
        for name, alloc in drivers.items()
    ]
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node, "annotations": {MIGRATED_PLUGINS: ",".join(migrated)}},
        "spec": {"drivers": entries},
    }


class VolumeMaker:
    """Each Pod's own claim and volume, bound to each other (upstream
    ``CreatePodWithPersistentVolume`` with ``bindVolume`` and scheduler_perf's volume
    factory): Pod ``i`` of ``namespace`` gets claim ``pvc-<i>`` from ``pvc_template`` and
    volume ``<namespace>-vol-<i>`` from ``pv_template`` (a CSI volume's ``volumeHandle``
    is its name, an AWS disk's ``volumeID`` is ``vol-<i>``), both with status ``Bound``;
    the Pod's only volume is that claim."""

    def __init__(self, pv_template: str, pvc_template: str, namespace: str) -> None:
        self.pv = Manifest(pv_template)
        self.pvc = Manifest(pvc_template)
        self.namespace = namespace

    def make(self, index: int, count: int) -> tuple[Obj, Obj, api.Volume]:
        """Pod ``index``'s claim, volume (create the claim first) and the Pod's volume."""
        ns, claim = self.namespace, f"pvc-{index}"
        pvc, pv = self.pvc.document(index, count), self.pv.document(index, count)
        name = f"{ns}-vol-{index}"
        pv["metadata"] = {**(pv.get("metadata") or {}), "name": name}
        spec = pv.setdefault("spec", {})
        if isinstance(spec.get("csi"), dict):
            spec["csi"] = {**spec["csi"], "volumeHandle": name}
        elif isinstance(spec.get("awsElasticBlockStore"), dict):
            spec["awsElasticBlockStore"] = {
                **spec["awsElasticBlockStore"],
                "volumeID": f"vol-{index}",
            }
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": ns,
            "name": claim,
            "apiVersion": "v1",
        }
        pv["status"] = {"phase": "Bound"}
        pvc["metadata"] = {**(pvc.get("metadata") or {}), "name": claim, "namespace": ns}
        pvc.setdefault("spec", {})["volumeName"] = name
        pvc["status"] = {"phase": "Bound"}
        for doc, kind in ((pv, "PersistentVolume"), (pvc, "PersistentVolumeClaim")):
            doc.setdefault("apiVersion", "v1")
            doc.setdefault("kind", kind)
        return pvc, pv, api.Volume("vol", api.VOLUME_PVC, claim=claim)


def base_node() -> dict[str, Any]:
    """Upstream ``makeBaseNode``: 110 Pods, 4 CPU, 32Gi, Ready (used without a template)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {},
        "spec": {},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def base_pod() -> dict[str, Any]:
    """Upstream ``makeBasePod``: ``pod-`` + random, one pause container with port 80 and
    100m / 500Mi requests and limits (used when neither op nor case names a template)."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    container = {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10.2",
        "ports": [{"containerPort": 80}],
        "resources": {"requests": dict(resources), "limits": dict(resources)},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {"containers": [container]},
    }


def make_object(
    doc: dict[str, Any],
    namespace: str,
    names: Names,
    exists: Callable[[str, str, str], bool],
    path: str,
    *,
    strict_scope: bool = True,
) -> dict[str, Any]:
    """A ``createAny`` / ``churn`` object, named (``exists(kind, namespace, name)`` tells a
    clash) and placed in ``namespace`` by its kind's scope.  ``strict_scope`` (createAny):
    a namespace for a cluster-scoped kind, or none for a namespaced one, is an error; churn
    ignores the namespace of cluster-scoped kinds as upstream does."""
    kind = str(doc.get("kind", ""))
    if not kind:
        raise InputError("kind is required", file=path)
    meta = dict(doc.get("metadata") or {})
    ns = ""
    if kind in CLUSTER_SCOPED:
        if namespace and strict_scope:
            raise InputError(
                f"namespace {namespace!r} set, but {kind} is cluster-scoped", file=path
            )
        meta.pop("namespace", None)
    else:
        if not namespace:
            raise InputError(f"namespace not set, but {kind} is namespaced", file=path)
        ns = meta["namespace"] = namespace
    meta["name"] = _name_of(meta, names, lambda n: exists(kind, ns, n), path)
    meta.pop("generateName", None)
    return {**doc, "metadata": meta}
