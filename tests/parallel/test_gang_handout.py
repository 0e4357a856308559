"""A gang's siblings handed out with the member popped (``PendingGangs.take_siblings``)."""

from __future__ import annotations

from kubesched.parallel import protocol as p
from kubesched.parallel.dispatcher import PendingGangs
from kubesched.testing import make_pod
from tests.queue.support import FIT, POD_LABEL, QUEUE, Clock, make_queue


def test_a_handed_sibling_is_in_flight_and_its_own_update_does_not_queue_it_again() -> None:
    """The live coordinator's hand-out patch is an update of each sibling: a sibling taken
    out of the queue must be in flight there (as the popped member is), or the update puts it
    back in activeQ and it is handed out a second time, breaking the gang on its shard."""
    q = make_queue(Clock(), {FIT: [(POD_LABEL, QUEUE)]})
    gangs = PendingGangs()
    pods = [make_pod(f"m{i}").labels(**{p.GROUP_LABEL: "g"}).obj() for i in range(3)]
    for pod in pods:
        q.add(pod)
        gangs.added(pod)
    first = q.pop()
    assert first is not None
    siblings = list(gangs.take_siblings(q, first.pod, "default/g", held=()))
    assert sorted(s.pod.name for s in siblings) == ["m1", "m2"]
    for s in siblings:
        assert q.queue_of(s.pod.key) == "in_flight" and s.attempts == 1
        handed = make_pod(s.pod.name).labels(**{p.GROUP_LABEL: "g", "handed": "1"}).obj()
        q.update(s.pod, handed)
    assert q.pop() is None
