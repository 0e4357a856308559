"""The scheduler_perf ops of one workload run (upstream ``executor.go``): ``createNodes``,
``createNamespaces``, ``createPods`` (waiting, ``skipWaitToCompletion``, ``steadyState``),
``deletePods``, ``churn``, ``barrier``, ``sleep``, ``start/stopCollectingMetrics``,
``createAny``, ``updateAny`` (:mod:`kubesched.bench.update`), ``createPodGroups`` (the
Workload API's PodGroups, :mod:`kubesched.api.workload`) and the DRA ops of
:mod:`kubesched.bench.dra` (``createPodSets`` is unrolled into ``createPods`` by
:mod:`kubesched.bench.params`), as a part of
:class:`kubesched.bench.runner._WorkloadRun` (see the runner's docstring for the semantics)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kubesched.api import objects as api
from kubesched.api import resource
from kubesched.api import workload as wl
from kubesched.api.errors import InputError
from kubesched.bench import background, dra, objects, update
from kubesched.bench import params as p
from kubesched.bench.config import TestCase, Workload
from kubesched.bench.declaredfeatures import MockFeatures
from kubesched.bench.loop import Loop, WorkloadError
from kubesched.bench.results import WorkloadResult
from kubesched.config.featuregates import FeatureGates
from kubesched.devices import draoptions
from kubesched.sim.apiserver import SimApiServer


class Ops:
    """One method per op, named ``_`` + the op's step class (``_CreatePods``, ...)."""

    api: SimApiServer
    loop: Loop
    options: Any
    known: dict[str, int]
    writer: background.Writer
    result: WorkloadResult
    names: objects.Names
    case: TestCase
    workload: Workload
    scheduler: Any
    measured: int
    mock: MockFeatures | None
    """The ``nodedeclaredfeatures`` suite's mock node features (:mod:`.declaredfeatures`)."""
    gates: FeatureGates
    """The workload's release and feature gates (what the API server serves and admits, and
    what the allocator of ``allocResourceClaims`` does)."""

    def _start(
        self, name: str, namespaces: tuple[str, ...], selector: Mapping[str, str] | None
    ) -> None:
        """Begin a measured phase (the runner provides it)."""
        raise NotImplementedError

    def _stop(self) -> None:
        """End the measured phase (the runner provides it)."""
        raise NotImplementedError

    def _namespace(self, name: str) -> None:
        self.api.create_namespace(name)
        self.known.setdefault(name, 0)

    def _CreateNodes(self, step: p.CreateNodes) -> None:
        manifest = objects.Manifest(step.template, step.template_params) if step.template else None
        taken: set[str] = set()
        strategy = step.allocatable
        maker = objects.NodeMaker(
            manifest,
            self.names,
            lambda n: n in self.api.nodes or n in taken,
            f"node-{step.index}-",
            strategy.allocatable if strategy else None,
        )
        nodes: list[api.Node] = []
        for i in range(step.count):
            node = maker.make(i, step.count)
            taken.add(node.name)
            nodes.append(node)
        if step.label_key and step.label_values:
            for j, node in enumerate(sorted(nodes, key=lambda n: n.name)):
                node.labels[step.label_key] = step.label_values[j % len(step.label_values)]
        for node in nodes:
            if self.mock is not None:  # upstream: the suite's nodeUpdateFn, after the op
                self.mock.declare(node)
            if step.unique_label_key:
                node.labels[step.unique_label_key] = self.names.uid()
            self.writer.create(self.api.create_node, node)
            if strategy is not None:
                doc = objects.csinode(node.name, strategy.csi, strategy.migrated)
                self.writer.create(self.api.create_object, doc)

    def _CreateNamespaces(self, step: p.CreateNamespaces) -> None:
        labels: dict[str, str] = {}
        if step.template:
            meta = objects.Manifest(step.template).document().get("metadata") or {}
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        for i in range(step.count):
            name = f"{step.prefix}-{i}"
            self.api.create_namespace(name, labels)
            self.known.setdefault(name, 0)

    def _CreatePods(self, step: p.CreatePods) -> None:
        ns = step.namespace
        self._namespace(ns)
        manifest = None
        if step.template is not None:  # else upstream's base Pod, without signature label
            manifest = objects.Manifest(step.template, step.template_params)
        batch = step.signature_batch_size if manifest is not None else 0
        exists = lambda n: f"{ns}/{n}" in self.api.pods  # noqa: E731
        mark = self.mock.require if self.mock is not None else None
        maker = objects.PodMaker(manifest, ns, self.names, exists, batch, mark)
        if step.collect_metrics:
            self._start(ns, (ns,), None)
        if step.steady_state:
            self._steady(step, maker)
        else:
            volumes = None
            if step.pv_template and step.pvc_template:
                volumes = objects.VolumeMaker(step.pv_template, step.pvc_template, ns)
            for i in range(step.count):
                pod = maker.make(i, step.count)
                if volumes is not None:
                    pvc, pv, volume = volumes.make(i, step.count)
                    self.writer.create(self.api.create_object, pvc)
                    self.writer.create(self.api.create_object, pv)
                    pod.volumes = (volume,)
                self.writer.create(self.api.create_pod, pod)
            if step.skip_wait:
                self.known[ns] += step.count
            else:
                self._wait_bound(ns, step.count)
        if step.collect_metrics:
            self._stop()

    def _wait_bound(self, ns: str, count: int) -> None:
        """Upstream ``waitUntilPodsScheduledInNamespace``: until ``count`` Pods of ``ns`` are
        bound (any of them, not only the op's)."""
        self.loop.wait(
            lambda: self.api.count(ns, "Scheduled") >= count,
            lambda: (
                f"{self.api.count(ns, 'Scheduled')} of {count} Pods of namespace {ns} scheduled"
            ),
            timeout=self.options.timeout,
        )

    def _steady(self, step: p.CreatePods, maker: objects.PodMaker) -> None:
        seen: list[api.Pod] = []
        total = [0]

        def bound(pod: api.Pod) -> None:
            if pod.namespace == step.namespace:
                seen.append(pod)

        self.api.on_bound.append(bound)
        try:
            for i in range(step.count):
                self.api.create_pod(maker.make(i, step.count))
            end = time.perf_counter() + step.duration

            def done() -> bool:
                while seen:
                    pod = seen.pop()
                    total[0] += 1
                    self.api.delete_pod(pod, grace=0)
                    # upstream creates each with its strategy's count 1: template Pod 0 of 1
                    self.api.create_pod(maker.make(0, 1))
                return time.perf_counter() >= end

            self.loop.wait(
                done, lambda: "steady state", timeout=step.duration + 1.0, stall_fails=False
            )
        finally:
            self.api.on_bound.remove(bound)
        if total[0] == 0:
            raise WorkloadError("no pod at all got scheduled in the steady-state duration")

    def _DeletePods(self, step: p.DeletePods) -> None:
        victims = self.api.pods_in(step.namespace, step.label_selector)
        if step.per_second <= 0:
            for pod in victims:
                self.api.delete_pod(pod)
            return
        task = background.DeleteAtRate(
            self.api, victims, 1.0 / step.per_second, time.perf_counter()
        )
        self.loop.background.append(task)
        if not step.skip_wait:
            self.loop.wait(
                lambda: task not in self.loop.background,
                lambda: f"{task.left} Pods left to delete",
                timeout=self.options.timeout,
                stall_fails=False,
            )

    def _Churn(self, step: p.Churn) -> None:
        self._namespace(step.namespace)
        docs = []
        for path in step.templates:
            manifest = objects.Manifest(path)
            if not manifest.static:
                raise WorkloadError(f"{path}: churn templates are plain YAML, not rendered")
            docs.append((path, manifest.document()))
        self.loop.background.append(background.Churn(self.writer, step, docs, time.perf_counter()))

    def _Barrier(self, step: p.Barrier) -> None:
        namespaces = list(step.namespaces) or list(self.known)
        for ns in namespaces:
            if ns not in self.known:
                raise WorkloadError(f"unknown namespace {ns}")
        for ns in namespaces:
            self._barrier(ns, self.known[ns], step)
        if step.stage == "Scheduled":
            for ns in namespaces:
                del self.known[ns]

    def _barrier(self, ns: str, want: int, step: p.Barrier) -> None:
        def reached() -> int:
            return self.api.count(ns, step.stage, step.label_selector)

        self.loop.wait(
            lambda: reached() >= want,
            lambda: f"barrier: {reached()} of {want} Pods of namespace {ns} {step.stage}",
            timeout=self.options.timeout,
        )

    def _Sleep(self, step: p.Sleep) -> None:
        self.loop.run_for(step.duration)

    def _StartCollecting(self, step: p.StartCollecting) -> None:
        for ns in step.namespaces:
            self._namespace(ns)
        self._start(step.name, step.namespaces, step.label_selector)

    def _StopCollecting(self, step: p.StopCollecting) -> None:
        if self.loop.phase is None:
            raise WorkloadError("missing startCollectingMetrics operation before stopping")
        self._stop()

    def _CreateAny(self, step: p.CreateAny) -> None:
        if step.namespace:
            self._namespace(step.namespace)
        manifest = objects.Manifest(step.template, step.template_params)
        for i in range(step.count):
            doc = objects.make_object(
                manifest.document(i, step.count),
                step.namespace,
                self.names,
                self.writer.exists,
                step.template,
            )
            if doc.get("kind") in resource.KINDS:
                # the API server validates it; the scheduler would meet the error mid-run
                try:
                    resource.validate(doc, "")
                except InputError as err:
                    raise err.with_file(step.template) from None
            self.writer.create_any(doc)

    def _CreatePodGroups(self, step: p.CreatePodGroups) -> None:
        """Upstream ``runCreatePodGroupsOp``: each rendered template (``Index`` the group's
        number) is decoded as a ``scheduling.k8s.io/v1beta1`` PodGroup, as upstream's typed
        client sends it whatever ``apiVersion`` the template names, and created in the op's
        namespace; the API server's refusal (the kind not served, an invalid spec) fails the
        workload, as upstream fails fast on ``Invalid``.  Upstream's cluster runs without the
        Priority admission plugin, so ``spec.priority`` stays as the template gives it.
        Upstream then waits for its informer to list them; here an object is seen by the
        scheduler when it is created."""
        self._namespace(step.namespace)
        manifest = objects.Manifest(step.template, step.template_params)
        for i in range(step.count):
            doc = manifest.document(i, step.count)
            doc = {**doc, "apiVersion": f"{wl.GROUP}/v1beta1", "kind": "PodGroup"}
            doc = objects.make_object(
                doc, step.namespace, self.names, self.writer.exists, step.template
            )
            try:
                where = [f"{step.template} (Index {i})"]
                wl.admit([doc], self.gates, where, priority_admission=False)
            except InputError as err:
                raise WorkloadError(f"creating PodGroup: {err}") from None
            self.writer.create_any(doc)

    def _UpdateAny(self, step: update.UpdateAny) -> None:
        docs = update.documents(step, self.names)
        if step.per_second <= 0:
            for doc in docs:
                update.update(self.api, doc, step.subresources)
            return
        task = update.UpdateAtRate(
            self.api, docs, step.subresources, 1.0 / step.per_second, time.perf_counter()
        )
        self.loop.background.append(task)
        self.loop.wait(
            lambda: task not in self.loop.background,
            lambda: f"{task.left} objects left to update",
            timeout=self.options.timeout,
            stall_fails=False,
        )

    def _CreateResourceDriver(self, step: dra.CreateResourceDriver) -> None:
        dra.create_resource_driver(self.api, step.driver, step.nodes, step.max_claims)

    def _AllocResourceClaims(self, step: dra.AllocResourceClaims) -> None:
        options = draoptions.Options.of_release(self.gates.at_least, self.gates.enabled)
        dra.alloc_resource_claims(self.api, step.namespace, self.names.rng, options)
