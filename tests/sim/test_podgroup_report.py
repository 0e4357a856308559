"""``schedule`` reports Workload API gangs as whole units (``podGroups``): when ``minCount``
members were bound, members running, the PodGroup cycle's condition; and a member's
attempts count every cycle its group ran (not only the cycles it was popped in)."""

from __future__ import annotations

from kubesched.config import featuregates
from kubesched.sim.whatif import schedule
from tests._podgroup import gang, member, node

GATES = featuregates.with_settings("1.37", {"GenericWorkload": True})


def test_gangs_reported_whole() -> None:
    cluster = [node("n0", "4"), gang("fits", 2), gang("short", 3)]
    pods = [member(f"f{i}", "fits", "1") for i in range(2)]
    pods += [member(f"s{i}", "short", "2") for i in range(3)]
    out = schedule(cluster, pods, gates=GATES)
    groups = out["podGroups"]
    fits, short = groups["ns/fits"], groups["ns/short"]
    assert (fits["minMember"], fits["running"], fits["phase"]) == (2, 2, "Running")
    assert fits["completeSeconds"] is not None
    assert fits["condition"]["reason"] == "Scheduled"
    assert (short["running"], short["completeAt"]) == (0, None)
    assert short["condition"]["reason"] == "Unschedulable"
    attempts = {k: v["attempts"] for k, v in out["pods"].items() if k.startswith("ns/s")}
    assert len(set(attempts.values())) == 1 and attempts["ns/s0"] > 1


def test_no_pod_groups_without_the_gate() -> None:
    out = schedule([node("n0", "4")], [member("f0", "fits", "1")])
    assert "podGroups" not in out
