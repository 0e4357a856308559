"""ClusterEvent as a dict key: its hash is kept from construction, and an event that
crossed a process boundary (pickled where strings hash differently) still finds the
entries an equal event made here keys."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

from kubesched.framework.clusterevents import ActionType, ClusterEvent, Resource

_CHILD = (
    "import pickle, sys\n"
    "from kubesched.framework.clusterevents import ActionType, ClusterEvent, Resource\n"
    "ev = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE, 'AssignedPodDelete')\n"
    "sys.stdout.buffer.write(pickle.dumps(ev))\n"
)


def test_an_event_pickled_in_another_process_is_the_same_key() -> None:
    here = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
    table = {here: "registered"}
    for seed in ("1", "2"):  # one of them hashes strings differently from this process
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _CHILD], env=env, capture_output=True, check=True
        ).stdout
        there = pickle.loads(out)
        assert there == here
        assert hash(there) == hash(here)
        assert table[there] == "registered"


def test_equal_events_hash_alike_whatever_their_construction() -> None:
    a = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL)
    b = ClusterEvent(resource=Resource.NODE, action=ActionType.UPDATE_NODE_LABEL, label="")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL, "x")
