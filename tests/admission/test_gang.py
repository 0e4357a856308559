"""Gang bookkeeping: members, assignments, phases, and the API-side report."""

from __future__ import annotations

from kubesched.admission import gang
from kubesched.admission import objects as o
from kubesched.api import objects as api
from kubesched.testing import make_pod


def member(name: str, group: str = "g", node: str = "") -> api.Pod:
    b = make_pod(name, "ns").labels(**{o.POD_GROUP_LABEL: group})
    return b.node(node).obj() if node else b.obj()


def test_tracker_counts_and_phases() -> None:
    now = [1.0]
    t = gang.GangTracker(lambda: now[0])
    t.min_member = lambda key: 2
    a, b = member("a"), member("b")
    t.on_pod_add(a)
    t.on_pod_add(b)
    t.on_pod_add(make_pod("loner", "ns").obj())
    assert t.total("ns/g") == 2 and t.first_seen("ns/g") == 1.0
    assert t.phase("ns/g", 2) == gang.PENDING
    now[0] = 2.0
    t.placed(a)
    assert t.phase("ns/g", 2) == gang.SCHEDULING and [p.name for p in t.unassigned("ns/g")] == ["b"]
    now[0] = 3.0
    t.placed(b)
    g = t.groups["ns/g"]
    assert (g.first_assigned, g.scheduled_at) == (2.0, 3.0)
    assert t.phase("ns/g", 2) == gang.SCHEDULED
    t.on_pod_update(a, member("a", node="n"))
    t.on_pod_update(b, member("b", node="n"))
    assert t.phase("ns/g", 2) == gang.RUNNING
    t.on_pod_delete(member("a", node="n"))
    t.unplaced(a)
    assert t.total("ns/g") == 1 and t.assigned("ns/g") == 1
    report = t.report({"ns/g": o.PodGroupSpec("ns", "g", 2)})
    assert report["ns/g"] == {
        "minMember": 2,
        "members": 1,
        "scheduled": 1,
        "running": 1,
        "phase": gang.SCHEDULING,
        "releases": 0,
    }


def test_forgetting_every_member_resets_the_first_assignment() -> None:
    t = gang.GangTracker()
    a = member("a")
    t.placed(a)
    t.unplaced(a)
    assert t.groups["ns/g"].first_assigned is None


def test_gang_report_from_the_api_view() -> None:
    pods = [member(f"m{i}") for i in range(3)] + [member("x", group="h")]
    created = {p.key: 10.0 + i for i, p in enumerate(pods)}
    bound = {"ns/m0": 15.0, "ns/m1": 14.0, "ns/x": 20.0}
    live = {"ns/m0": member("m0", node="n"), "ns/m1": member("m1", node="n")}
    specs = {"ns/g": o.PodGroupSpec("ns", "g", 2), "ns/h": o.PodGroupSpec("ns", "h", 2)}
    out = gang.gang_report(specs, pods, created, bound, live)
    assert out["ns/g"]["completeAt"] == 15.0 and out["ns/g"]["completeSeconds"] == 5.0
    assert out["ns/g"]["running"] == 2 and out["ns/g"]["phase"] == gang.RUNNING
    assert out["ns/h"]["completeAt"] is None and out["ns/h"]["phase"] == gang.PENDING
