"""NodeName: upstream ``node_name_test.go`` as data."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.framework.interface import ActionType, Code, CycleState, Handle, Status
from kubesched.plugins import nodename as nn
from kubesched.testing import make_cluster, make_node, make_pod

WANT = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match the requested node name",)
)


def plugin() -> nn.NodeName:
    return nn.new(None, Handle(make_cluster([])))


@pytest.mark.parametrize(
    ("pod_node", "want_pass"),
    [("", ["foo", "bar", "baz"]), ("foo", ["foo"]), ("bar", ["bar"]), ("gone", [])],
    ids=["no host specified", "host matches", "other host matches", "no such node"],
)
def test_filter(pod_node: str, want_pass: list[str]) -> None:
    cluster = make_cluster([make_node(n).obj() for n in ("foo", "bar", "baz")])
    rows = cluster.nodes.order()
    verdict = plugin().filter(CycleState(), make_pod("p").node(pod_node).obj(), cluster, rows)
    assert [cluster.nodes.names[r] for r in rows[verdict.codes == 0]] == want_pass
    for code in verdict.codes[verdict.codes != 0]:
        assert verdict.table[int(code)] == WANT


def test_filter_on_row_subset() -> None:
    cluster = make_cluster([make_node(n).obj() for n in ("foo", "bar")])
    rows = np.array([cluster.nodes.row_of["bar"]], dtype=np.int64)
    verdict = plugin().filter(CycleState(), make_pod("p").node("foo").obj(), cluster, rows)
    assert verdict.codes.tolist() == [1]


def test_fits_and_events() -> None:
    assert nn.fits(make_pod("p").obj(), make_node("x").obj())
    assert not nn.fits(make_pod("p").node("y").obj(), make_node("x").obj())
    (ev,) = plugin().events_to_register()
    assert (ev.event.resource, ev.event.action, ev.hint) == ("Node", ActionType.ADD, None)
    assert not hasattr(plugin(), "pre_filter")  # v1.34 NodeName has no PreFilter
