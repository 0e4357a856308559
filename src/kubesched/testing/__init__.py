"""The public test kit: what plugin authors and kubesched's own tests build tests from.

Not part of the product: no room of the scheduler imports it (an import-linter contract in
``pyproject.toml`` checks that), and nothing here is used at run time.  It holds

- builders (:mod:`~kubesched.testing.builders`): ``make_pod("p").req(cpu="100m")``,
  ``make_node("n").cap(cpu="4")``, ``make_cluster(nodes, pods)``, and the terms Pods carry
  (label selectors, node and Pod (anti-)affinity terms, topology spread constraints);
- one fake API server (:class:`~kubesched.testing.fakeapi.FakeApi`): what a scheduler or a
  plugin asks of the API server, in memory, recording binds, deletions and failures;
- a virtual clock (:class:`~kubesched.testing.clock.VirtualClock`): time that moves only when
  the test moves it;
- running a scheduler (:mod:`~kubesched.testing.scheduling`): ``new_scheduler(config,
  registry)`` on a FakeApi and a VirtualClock, ``drain(scheduler)`` until no Pod is ready;
- the plugin conformance suite (:mod:`~kubesched.testing.conformance`): ``assert_conformant``
  and ``check_plugin`` for any plugin factory, in-tree or out-of-tree.

docs/testing.md shows them at work.  May import any room (``scheduler`` for
:func:`~kubesched.testing.scheduling.new_scheduler`).
"""

from __future__ import annotations

from kubesched.testing import conformance
from kubesched.testing.builders import (
    DoesNotExist,
    Exists,
    In,
    NodeBuilder,
    NotIn,
    PodBuilder,
    affinity_term,
    make_cluster,
    make_node,
    make_pod,
    match_labels,
    node_affinity,
    node_selector_term,
    spread_constraint,
    weighted,
)
from kubesched.testing.clock import VirtualClock
from kubesched.testing.fakeapi import FakeApi
from kubesched.testing.scheduling import drain, new_scheduler

__all__ = [
    "DoesNotExist",
    "Exists",
    "FakeApi",
    "In",
    "NodeBuilder",
    "NotIn",
    "PodBuilder",
    "VirtualClock",
    "affinity_term",
    "conformance",
    "drain",
    "make_cluster",
    "make_node",
    "make_pod",
    "match_labels",
    "new_scheduler",
    "node_affinity",
    "node_selector_term",
    "spread_constraint",
    "weighted",
]
