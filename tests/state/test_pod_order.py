"""Each node's Pods in upstream's ``NodeInfo.Pods`` order (``ClusterState.pods_on_node``):
appended when added, the last one moved into a removed Pod's place, and removed and appended
again when updated, as upstream's cache does (``removeFromSlice``, ``updatePod``).
Preemption takes equally important victims in this order."""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.state.cache import ClusterState
from kubesched.testing import make_node, make_pod


def _cluster() -> ClusterState:
    c = ClusterState()
    c.add_node(make_node("n0").cap(cpu="64", memory="64Gi", pods=100).obj())
    return c


def _bound(name: str, **labels: str) -> api.Pod:
    return make_pod(name).req(cpu="100m").node("n0").labels(**labels).obj()


def _names(c: ClusterState) -> list[str]:
    return [k.split("/")[1] for k in c.pods_on_node["n0"]]


def test_a_removed_pod_is_replaced_by_the_last() -> None:
    c = _cluster()
    for name in "abcde":
        c.add_pod(_bound(name))
    assert _names(c) == list("abcde")
    c.remove_pod("default/b")
    assert _names(c) == list("aecd")
    c.remove_pod("default/d")
    assert _names(c) == list("aec")
    c.remove_pod("default/c")  # the last one: nothing moves
    assert _names(c) == list("ae")


def test_an_updated_pod_moves_to_the_end() -> None:
    c = _cluster()
    for name in "abcd":
        c.add_pod(_bound(name))
    c.add_pod(_bound("b", tier="web"))  # an update of a bound Pod: removed, then appended
    assert _names(c) == list("adcb")


def test_a_confirmed_assumed_pod_moves_to_the_end() -> None:
    c = _cluster()
    c.add_pod(_bound("a"))
    for name in "xyz":
        c.assume_pod(make_pod(name).req(cpu="100m").obj(), "n0")
    row = c.nodes.row_of["n0"]
    generation = int(c.nodes.generation[row])
    c.add_pod(_bound("x"))  # the bind confirmed: upstream's updatePod
    assert _names(c) == list("azyx")
    assert c.reorders[row] == 1  # the order changed, the row's generation did not
    assert int(c.nodes.generation[row]) == generation
    c.add_pod(_bound("x"))  # already last: nothing moves
    assert _names(c) == list("azyx")
    c.add_pod(_bound("z"))
    c.add_pod(_bound("y"))
    assert _names(c) == list("axzy")
    assert c.reorders[row] == 3


def test_bulk_load_keeps_the_listed_order() -> None:
    c = _cluster()
    c.add_bound_pods([_bound(n) for n in "dbca"])
    assert _names(c) == list("dbca")


def test_recounting_resizing_pods_keeps_the_order() -> None:
    c = _cluster()
    pods = [_bound(n) for n in "abc"]
    pods[0].resize_totals = ({api.CPU: 500}, {api.CPU: 500, api.MEMORY: 0})
    c.add_bound_pods(pods)
    c.count_resize_totals(True)
    assert _names(c) == list("abc")
    assert c.nodes.requested[c.nodes.row_of["n0"], 0] == 700


def test_pods_of_a_deleted_node_come_back_in_their_order() -> None:
    c = _cluster()
    for name in "abcd":
        c.add_pod(_bound(name))
    node = c.node("n0")
    assert node is not None
    c.remove_node("n0")
    c.remove_pod("default/b")  # upstream's node-less NodeInfo: d takes b's place
    c.add_node(node)
    assert _names(c) == list("adc")


def test_a_list_put_back_from_outside_still_loses_the_right_pod() -> None:
    # The cache keeps where each key was put (a hint for removing a Pod from a node of
    # thousands); the PodGroup cycle puts a node's saved list back, so hints may be stale.
    c = _cluster()
    for name in "abcde":
        c.add_pod(_bound(name))
    c.pods_on_node["n0"] = ["default/" + n for n in "edcba"]
    c.remove_pod("default/b")  # its hint says 1, where d now is
    assert _names(c) == list("edca")
    c.remove_pod("default/e")
    assert _names(c) == list("adc")
    c.add_pod(_bound("f"))
    c.remove_pod("default/a")
    assert _names(c) == list("fdc")
