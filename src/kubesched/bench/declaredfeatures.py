"""The ``nodedeclaredfeatures`` suite's hooks: mock node features, as upstream's Go test adds.

Upstream's v1.37 ``test/integration/scheduler_perf/nodedeclaredfeatures`` runs its config
with two hooks of its own (``node_declared_features_test.go``), both only when the workload's
``featureGates`` set ``NodeDeclaredFeatures: true``:

- before the scheduler starts (``WithPreRunFn``), the feature registry of the
  ``nodedeclaredfeatures`` library is *replaced* by ``numNodeDeclaredFeatures`` mock features
  ``Feature1`` .. ``FeatureN``, each inferred for scheduling of every Pod that sets pod-level
  ``spec.resources`` (a missing or mistyped param is 0 features);
- after each ``createNodes`` (``WithNodeUpdateFn``), every Node's ``status.declaredFeatures``
  is set to all of them, sorted as Go's ``sort.Strings``.

So each Pod with pod-level resources needs all N features, every node declares them, and the
NodeDeclaredFeatures Filter runs for every Pod and node.  :func:`mock_features` reads the
workload; :class:`MockFeatures` gives the scheduler's registry (the plugin over the mock
registry) and marks Nodes and Pods.  The param counts as used only when the gate is set, as
upstream's ``GetParam`` is called only then (otherwise the runner refuses it as unused).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api import objects as api
from kubesched.bench.config import Workload
from kubesched.framework.interface import PluginFactory
from kubesched.plugins import nodedeclaredfeatures as ndf
from kubesched.plugins.registry import full_registry

PARAM = "numNodeDeclaredFeatures"
GATE = ndf.NAME
"""The feature gate (and plugin) name, ``NodeDeclaredFeatures``."""


def hooked(workload: Workload) -> bool:
    """Whether the workload's own ``featureGates`` set the gate true: upstream's hooks read
    ``w.FeatureGates[features.NodeDeclaredFeatures]``, not the test case's gates."""
    return bool(workload.feature_gates.get(GATE, False))


@dataclass(frozen=True, slots=True)
class MockFeatures:
    """The mock registry of one workload: ``names`` sorted, as the Nodes declare them."""

    names: tuple[str, ...]

    def registry(self, version: str) -> dict[str, PluginFactory]:
        """The in-tree and entry-point plugins with NodeDeclaredFeatures asking the mock
        registry (Filter reasons as ``version``'s plugin words them)."""
        newest = ndf.RELEASES.get(version, ndf.RELEASES[ndf.NEWEST])
        release = ndf.Release(version, frozenset(self.names), newest.listed_reasons)
        return {**full_registry(), ndf.NAME: ndf.release_factory(release)}

    def declare(self, node: api.Node) -> None:
        """Set ``status.declaredFeatures`` of ``node`` to every mock feature."""
        node.declared_features = self.names

    def require(self, pod: api.Pod, manifest: Mapping[str, Any]) -> None:
        """Add every mock feature to what ``pod`` (made from ``manifest``) needs when it sets
        pod-level ``spec.resources`` (the mock's ``InferForScheduling``)."""
        spec = manifest.get("spec")
        if isinstance(spec, Mapping) and spec.get("resources") is not None:
            pod.required_features = tuple(sorted({*pod.required_features, *self.names}))


def mock_features(workload: Workload) -> MockFeatures | None:
    """The workload's mock registry, or None when the gate is not set (no hook runs)."""
    if not hooked(workload):
        return None
    value = workload.params.get(PARAM, 0)
    count = int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
    return MockFeatures(tuple(sorted(f"Feature{i}" for i in range(1, count + 1))))
