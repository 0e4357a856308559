"""The sharded live mode's vocabulary: annotations, proposals, membership, the CLI flags, and
the fake API server's annotation patches checked with the real kubectl."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kubesched.cli import build_parser, main
from kubesched.live import sharding as sh
from kubesched.live.shard import shard_config
from kubesched.parallel import protocol as p
from tests.live.conftest import Api, kubectl, make_config, needs_kubectl, pod
from tests.live.fakeapi import FakeApiServer


def test_proposals_round_trip_and_garbage_is_refused() -> None:
    ok = sh.Proposal(1, 3, node="n1", resource_version="42", alternatives=(("n2", "7"),))
    assert sh.Proposal.decode(ok.encode()) == ok
    failed = sh.Proposal(0, 2, failed="Unschedulable", message="0/3 nodes", plugins=("A",))
    preempting = sh.Proposal(0, 2, failed="Unschedulable", nominated="n1", victims=("d/v",))
    assert sh.Proposal.decode(failed.encode()) == failed
    assert sh.Proposal.decode(preempting.encode()) == preempting
    for bad in ("", "{", "[]", '{"shard": 0}', '{"shard": 0, "attempt": 1}', '{"shard": "x"}'):
        assert sh.Proposal.decode(bad) is None
    assert json.loads(ok.encode())["alternatives"] == [{"node": "n2", "resourceVersion": "7"}]


def test_a_proposal_carries_the_in_process_shards_answer_and_reads_back_as_it() -> None:
    versions = {"n1": "42", "n2": "7"}.__getitem__
    res = p.Propose("d/a", "n1", 5, (("n2", 6),), p.LOCAL, "d/g")
    prop = sh.Proposal.of(res, 1, 3, versions)
    assert prop == sh.Proposal(1, 3, node="n1", resource_version="42", alternatives=(("n2", "7"),))
    back = sh.Proposal.decode(prop.encode())
    assert back is not None  # versions unknown, never node-local: the binder's full check
    assert back.result("d/a", "d/g") == p.Propose(
        "d/a", "n1", -1, (("n2", -1),), p.NOT_LOCAL, "d/g"
    )
    failed = p.Failed("d/a", "Unschedulable", "0/3 nodes", ("A",), ("B",), "n1", ("d/v",))
    back = sh.Proposal.decode(sh.Proposal.of(failed, 0, 2, versions).encode())
    assert back is not None and back.result("d/a", "") == failed


def test_owner_and_lease_names() -> None:
    assert sh.owner({sh.SHARD: "2", sh.ATTEMPT: "5"}) == (2, 5)
    assert sh.owner({}) == (-1, 0) and sh.owner({sh.SHARD: "-1"}) == (-1, 0)
    assert sh.lease_name(3) == "kubesched-shard-3" and sh.lease_index("kubesched-shard-3") == 3
    assert sh.lease_index("kubesched") is None and sh.lease_index("kubesched-shard-x") is None
    le = shard_config(make_config(leader=False), 4).leader_election
    assert (le.leader_elect, le.resource_name) == (True, "kubesched-shard-4")


def test_membership_follows_lease_renewals_as_observed_locally() -> None:
    now = [0.0]
    m = sh.Membership(2, clock=lambda: now[0])

    def lease(i: int, holder: str, renew: str) -> dict[str, object]:
        spec = {"holderIdentity": holder, "leaseDurationSeconds": 2, "renewTime": renew}
        return {"metadata": {"name": sh.lease_name(i)}, "spec": spec}

    m.observe(lease(0, "a", "t0"))
    m.observe(lease(1, "b", "t0"))
    m.observe(lease(7, "c", "t0"))  # beyond --shards: ignored
    m.observe({"metadata": {"name": "kubesched"}, "spec": {"holderIdentity": "x"}})
    assert m.live() == [0, 1]
    now[0] = 1.5
    m.observe(lease(0, "a", "t1"))
    m.observe(lease(1, "b", "t0"))  # unchanged record: not a renewal
    now[0] = 2.5
    assert m.live() == [0] and m.holder(1) == "b"
    m.observe(lease(0, "", "t2"))  # released on a graceful shutdown
    assert m.live() == []
    m.observe(lease(1, "b", "t0"), deleted=True)
    assert m.holder(1) == ""


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--shards", "2"], "--shards: only with --role"),
        (["--shard-index", "0"], "--shard-index: only with --role shard"),
        (["--role", "coordinator"], "--shards: required with --role coordinator"),
        (["--role", "coordinator", "--shards", "2", "--shard-index", "1"], "--shard-index"),
        (["--role", "shard", "--shards", "2"], "--shard-index: required with --role shard: 0..1"),
        (["--role", "shard", "--shards", "2", "--shard-index", "2"], "0..1"),
    ],
)
def test_role_flags_are_checked(
    flags: list[str], problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--config", str(tmp_path / "none.yaml"), *flags]) == 2
    assert problem in capsys.readouterr().err


def test_role_flags_parse() -> None:
    args = build_parser().parse_args(
        ["run", "--config", "c.yaml", "--role", "shard", "--shard-index", "1", "--shards", "3"]
    )
    assert (args.role, args.shard_index, args.shards) == ("shard", 1, 3)
    assert build_parser().parse_args(["run", "--config", "c.yaml"]).role is None
    with pytest.raises(SystemExit) as bad:
        build_parser().parse_args(["run", "--config", "c.yaml", "--role", "binder"])
    assert bad.value.code == 2


@needs_kubectl
def test_kubectl_annotates_and_patches_pods(server: FakeApiServer, api: Api) -> None:
    api.create(pod("p"))
    kubectl(server, "annotate", "pod", "p", "kubesched.io/shard=1", "kubesched.io/attempt=1")
    ann = api.pod("p")["metadata"]["annotations"]
    assert ann == {"kubesched.io/shard": "1", "kubesched.io/attempt": "1"}
    kubectl(
        server,
        "patch",
        "pod",
        "p",
        "--type",
        "merge",
        "-p",
        json.dumps({"metadata": {"annotations": {"kubesched.io/proposal": '{"node":"n1"}'}}}),
    )
    kubectl(server, "annotate", "pod", "p", "kubesched.io/shard-")  # removes the key
    ann = api.pod("p")["metadata"]["annotations"]
    assert ann == {"kubesched.io/attempt": "1", "kubesched.io/proposal": '{"node":"n1"}'}
    shown = kubectl(server, "get", "pod", "p", "-o", "jsonpath={.metadata.annotations}")
    assert json.loads(shown) == ann
    # A resourceVersion in the patch is a precondition: stale means 409 Conflict.
    rv = api.pod("p")["metadata"]["resourceVersion"]
    kubectl(server, "annotate", "pod", "p", "x=1", f"--resource-version={rv}")
    with pytest.raises(subprocess.CalledProcessError) as stale:
        kubectl(server, "annotate", "pod", "p", "x=2", "--overwrite", f"--resource-version={rv}")
    assert "the object has been modified" in stale.value.stderr
    kubectl(server, "patch", "pod", "p", "-p", '{"metadata":{"labels":{"a":"b"}}}')  # strategic
    assert api.pod("p")["metadata"]["labels"] == {"a": "b"}
    assert api.pod("p")["metadata"]["annotations"]["x"] == "1"
