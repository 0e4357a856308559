"""``oracle/compare.py``: a node's NodeResourcesFit reasons compared with upstream's Go map
order of scalar resources allowed for (v1.36, ``--family dra --seed 12``, case 185)."""

from __future__ import annotations

from compare import _node_differences


def test_scalar_insufficient_reasons_may_come_in_any_order() -> None:
    ours = {"feasible": False, "plugin": "NodeResourcesFit", "score": 0}
    theirs = dict(ours)
    ours["reasons"] = ["Insufficient cpu", "Insufficient a.com/x", "Insufficient b.com/y"]
    theirs["reasons"] = ["Insufficient cpu", "Insufficient b.com/y", "Insufficient a.com/x"]
    assert _node_differences("n0", ours, theirs) == []


def test_cpu_and_memory_keep_their_places() -> None:
    ours = {"feasible": False, "plugin": "NodeResourcesFit", "score": 0}
    theirs = dict(ours)
    ours["reasons"] = ["Insufficient cpu", "Insufficient memory"]
    theirs["reasons"] = ["Insufficient memory", "Insufficient cpu"]
    assert _node_differences("n0", ours, theirs)
