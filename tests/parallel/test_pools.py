"""Independent node pools: boundaries that hold, one-way boundaries, crossings, locks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import main
from kubesched.parallel.pools import check_pools, render

TAINT = {"key": "pool", "value": "b", "effect": "NoSchedule"}
TOLERATE_B = [{"key": "pool", "operator": "Equal", "value": "b", "effect": "NoSchedule"}]
CONFIG_A: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
}
CONFIG_B: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"resourceName": "pool-b-scheduler"},
    "profiles": [
        {
            "schedulerName": "pool-b",
            "pluginConfig": [
                {
                    "name": "NodeAffinity",
                    "args": {
                        "addedAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "pool", "operator": "In", "values": ["b"]}
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                }
            ],
        }
    ],
}


def node(name: str, pool: str = "", tainted: bool = True) -> dict[str, Any]:
    spec = {"taints": [TAINT]} if pool and tainted else {}
    labels = {"pool": pool} if pool else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
    }


def pod(
    name: str, scheduler: str = "default-scheduler", on: str = "", tolerations: Any = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [{"name": "c"}]}
    if on:
        spec["nodeName"] = on
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }


def snapshot(*items: dict[str, Any], b2_tainted: bool = True) -> dict[str, Any]:
    nodes = [node("a1"), node("a2"), node("b1", "b"), node("b2", "b", tainted=b2_tainted)]
    return {"apiVersion": "v1", "kind": "List", "items": [*nodes, *items]}


GOOD = (pod("web", on="a1"), pod("batch", "pool-b", on="b1", tolerations=TOLERATE_B))


def test_boundaries_both_sides_honour_are_independent() -> None:
    result = check_pools(snapshot(*GOOD), [CONFIG_A, CONFIG_B])
    assert result["ok"], render(result)
    assert result["schedulers"]["default-scheduler"]["poolNodes"] == ["a1", "a2"]
    assert result["schedulers"]["pool-b"]["poolNodes"] == ["b1", "b2"]


@pytest.mark.parametrize(
    ("case", "extra", "b2_tainted", "key", "expect"),
    [
        (
            "affinity without a taint is one-way",
            (),
            False,
            "overlaps",
            [{"node": "b2", "schedulers": ["default-scheduler", "pool-b"]}],
        ),
        (
            "a default Pod tolerating everything reaches the pool",
            (pod("greedy", tolerations=[{"operator": "Exists"}]),),
            True,
            "overlaps",
            [
                {"node": "b1", "schedulers": ["default-scheduler", "pool-b"]},
                {"node": "b2", "schedulers": ["default-scheduler", "pool-b"]},
            ],
        ),
        (
            "a default Pod bound inside pool b crossed the boundary",
            (pod("intruder", on="b1"),),
            True,
            "crossings",
            [{"pod": "ns/intruder", "scheduler": "default-scheduler", "node": "b1"}],
        ),
        (
            "a pool-b Pod bound outside its pool crossed the boundary",
            (pod("stray", "pool-b", on="a2", tolerations=TOLERATE_B),),
            True,
            "crossings",
            [{"pod": "ns/stray", "scheduler": "pool-b", "node": "a2"}],
        ),
        ("a Pod nobody schedules", (pod("ghost", "nobody"),), True, "unowned", ["ns/ghost"]),
    ],
)
def test_broken_boundaries_are_reported(
    case: str, extra: tuple[dict[str, Any], ...], b2_tainted: bool, key: str, expect: list[Any]
) -> None:
    result = check_pools(snapshot(*GOOD, *extra, b2_tainted=b2_tainted), [CONFIG_A, CONFIG_B])
    assert not result["ok"], case
    got = result[key]
    if key != "unowned":
        got = [{k: item[k] for k in expect[0]} for item in got]
    assert got == expect, render(result)


def test_crossing_names_the_filter_reason() -> None:
    result = check_pools(snapshot(*GOOD, pod("intruder", on="b1")), [CONFIG_A, CONFIG_B])
    assert "untolerated taint" in result["crossings"][0]["reason"]


def test_shared_election_lock_and_duplicate_names() -> None:
    same_lock = {**CONFIG_B, "leaderElection": {}}
    result = check_pools(snapshot(*GOOD), [CONFIG_A, same_lock, CONFIG_A], names=["a", "b", "c"])
    assert result["sharedLocks"] == [
        {"lock": "kube-system/kube-scheduler", "configs": ["a", "b", "c"]}
    ]
    assert result["duplicateSchedulers"] == ["default-scheduler"]


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {}
    for name, doc in {"a": CONFIG_A, "b": CONFIG_B, "good": snapshot(*GOOD)}.items():
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_text(yaml.safe_dump(doc))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(snapshot(*GOOD, b2_tainted=False)))
    args = ["pools", "check", "--config", str(files["a"]), "--config", str(files["b"])]
    assert main([*args, "--cluster", str(files["good"])]) == 0
    assert "pools are independent" in capsys.readouterr().out
    assert main([*args, "--cluster", str(bad), "-o", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [o["node"] for o in out["overlaps"]] == ["b2"]
