"""Upstream's DRA scheduler_perf cases (``benchmarks/dra``) through the runner: the ops
``createResourceDriver`` and ``allocResourceClaims``, claims from templates, shared claims."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.api import resource as r
from kubesched.api.errors import InputError
from kubesched.bench import dra, runner
from kubesched.bench import params as p
from kubesched.bench.config import load_test_cases
from kubesched.bench.gotemplate import parse
from kubesched.bench.loop import WorkloadError
from kubesched.config.featuregates import FeatureGates
from kubesched.devices import draoptions
from kubesched.sim.apiserver import RESERVED_FOR_MAX, SimApiServer
from kubesched.sim.engine import WallClock

V134 = FeatureGates("1.34")
"""benchmarks/dra/ is upstream v1.34's suite (its SchedulerQueueingHints gate is gone in 1.37)."""
CONFIG = str(Path(__file__).resolve().parents[2] / "benchmarks" / "dra" / "performance-config.yaml")


def _run(case: str, workload: str, **params: Any) -> runner._WorkloadRun:
    ((tc, w),) = p.select(load_test_cases(CONFIG), case=case, workload=workload)
    if params:
        w = dataclasses.replace(w, params=params)
    run = runner._WorkloadRun(tc, w, p.resolve(tc, w), runner.RunOptions(timeout=60.0, gates=V134))
    try:
        run.run()
    except WorkloadError as err:
        run.result.error = str(err)
    finally:
        run.finish()
    return run


def _devices(bench: SimApiServer) -> Counter[tuple[str, str, str]]:
    used: Counter[tuple[str, str, str]] = Counter()
    for (kind, _), obj in bench.objects.items():
        if kind == "ResourceClaim":
            used.update(d.device_id for d in r.parse_claim(obj).allocation or ())
    return used


@pytest.mark.parametrize(
    "case", ["SchedulingWithResourceClaimTemplate", "SchedulingWithResourceClaim"]
)
def test_fast_workloads_bind_every_pod_with_distinct_devices(case: str) -> None:
    run = _run(case, "fast")
    assert run.result.error is None
    assert run.result.pods_bound == 10 and run.result.pods_unbound == 0
    used = _devices(run.api)
    assert used and max(used.values()) == 1
    # a claim per Pod from the template, or one claim shared by five Pods
    claims = [o for (k, _), o in run.api.objects.items() if k == "ResourceClaim"]
    assert len(claims) == (10 if "Template" in case else 2)
    assert all(len(o["status"]["reservedFor"]) == (1 if "Template" in case else 5) for o in claims)


def test_template_pods_beyond_the_devices_stay_pending() -> None:
    # 1 node of 10 devices, 12 Pods: the measured op cannot finish, 10 bind
    run = _run(
        "SchedulingWithResourceClaimTemplate",
        "fast",
        nodesWithDRA=1,
        nodesWithoutDRA=1,
        initPods=0,
        measurePods=12,
        maxClaimsPerNode=10,
    )
    assert run.result.error is not None
    assert run.result.pods_bound == 10
    assert max(_devices(run.api).values()) == 1


def test_steady_state_releases_claims_of_deleted_pods() -> None:
    # 1 node of 10 devices, 9 already allocated: only a freed device lets the next Pod in
    run = _run(
        "SteadyStateClusterResourceClaimTemplate",
        "fast",
        nodesWithDRA=1,
        nodesWithoutDRA=1,
        initClaims=9,
        maxClaimsPerNode=10,
        duration="1s",
    )
    assert run.result.error is None
    assert run.result.pods_bound > 10
    used = _devices(run.api)
    assert len(used) <= 10 and max(used.values()) == 1


def test_resource_slice_is_upstreams() -> None:
    s = r.parse_slice(dra.resource_slice("drv", "node-1", 3))
    assert (s.driver, s.pool, s.node_name, s.slice_count) == ("drv", "node-1", "node-1", 1)
    assert [d.name for d in s.devices] == ["instance-0", "instance-1", "instance-2"]
    assert s.devices[2].typed["dra.example.com/numa"] == ("int", 2)


def test_alloc_resource_claims_fills_nodes_without_double_allocation() -> None:
    bench = SimApiServer(WallClock(), lifecycle=False)
    for name in ("a", "b", "c"):
        bench.create_node(api.Node(name=name, labels={}))
    bench.create_object(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "test-class"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "drv"'}}]},
        }
    )
    assert dra.create_resource_driver(bench, "drv", "[ab]", 2) == 2
    for i in range(5):
        bench.create_object(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"c-{i}", "namespace": "init"},
                "spec": {
                    "devices": {
                        "requests": [{"name": "r", "exactly": {"deviceClassName": "test-class"}}]
                    }
                },
            }
        )
    with pytest.raises(WorkloadError, match="no node has its devices"):
        dra.alloc_resource_claims(bench, "init", random.Random(1))
    used = _devices(bench)
    assert len(used) == 4 and max(used.values()) == 1


def test_div_and_mod_template_functions() -> None:
    assert parse("{{div .Index 5}}-{{mod .Index 5}}").render({"Index": 12}) == "2-2"


def test_alloc_resource_claims_shares_devices_as_the_release_allocates() -> None:
    """``allocResourceClaims`` under DRAConsumableCapacity (v1.36+) puts several claims on
    one device that allows multiple allocations, each consuming what it asks."""
    bench = SimApiServer(WallClock(), lifecycle=False)
    bench.create_node(api.Node(name="a", labels={}))
    bench.create_object(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "test-class"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "drv"'}}]},
        }
    )
    device = {"name": "d", "allowMultipleAllocations": True,
              "capacity": {"bandwidth": {"value": "10G"}}}  # fmt: skip
    bench.create_object(
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
         "spec": {"driver": "drv", "nodeName": "a", "devices": [device],
                  "pool": {"name": "a", "generation": 1, "resourceSliceCount": 1}}}
    )  # fmt: skip
    exactly = {"deviceClassName": "test-class", "capacity": {"requests": {"bandwidth": "4G"}}}
    for i in range(3):
        bench.create_object(
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": f"c-{i}", "namespace": "init"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}}
        )  # fmt: skip
    v136 = FeatureGates("1.36")
    options = draoptions.Options.of_release(v136.at_least, v136.enabled)
    with pytest.raises(WorkloadError, match="c-2: no node has its devices"):
        dra.alloc_resource_claims(bench, "init", random.Random(1), options)
    shares = [
        obj["status"]["allocation"]["devices"]["results"][0]
        for (k, _), obj in bench.objects.items()
        if k == "ResourceClaim" and "allocation" in (obj.get("status") or {})
    ]
    assert [s["consumedCapacity"] for s in shares] == [{"bandwidth": "4000000000"}] * 2
    assert len({s["shareID"] for s in shares}) == 2


UPSTREAM_137 = Path(__file__).resolve().parents[2] / "benchmarks" / "upstream-1.37" / "dra"


def _run_137(config: str, case: str, workload: str, **params: int) -> runner._WorkloadRun:
    """The workload at v1.37, ``params`` in place of some of its own."""
    ((tc, w),) = p.select(load_test_cases(str(UPSTREAM_137 / config)), case=case, workload=workload)
    w = dataclasses.replace(w, params={**w.params, **params})
    options = runner.RunOptions(timeout=60.0, gates=FeatureGates("1.37"))
    run = runner._WorkloadRun(tc, w, p.resolve(tc, w), options)
    try:
        run.run()
    finally:
        run.finish()
    return run


def test_v137_templates_with_variables_and_range_render_and_bind() -> None:
    """v1.37's ResourceSlice and ResourceClaimTemplate use Go template variables, ``or``,
    ``nil``, ``range`` over an int, ``Int`` and ``JSON``: two requests, matchAttribute."""
    run = _run_137("performance-config.yaml", "SchedulingWithResourceClaimTemplate", "match_fast")
    assert run.result.pods_bound == 2 and run.result.pods_unbound == 0
    slices = [r.parse_slice(o) for (k, _), o in run.api.objects.items() if k == "ResourceSlice"]
    assert [len(s.devices) for s in slices] == [10]  # {{range ($numDevices | Int)}}
    claims = [r.parse_claim(o) for (k, _), o in run.api.objects.items() if k == "ResourceClaim"]
    # {{range $numRequests}}: five requests, their devices on one PCI root (matchAttribute)
    assert [len(c.allocation or ()) for c in claims] == [5, 5]


def test_an_invalid_dra_object_of_create_any_is_an_input_error_naming_its_template(
    tmp_path: Path,
) -> None:
    """An object ``createAny`` makes that the API server would refuse (an empty list
    attribute) is an input error naming its template, not met by the scheduler mid-run."""
    (tmp_path / "slice.yaml").write_text(
        "kind: ResourceSlice\napiVersion: resource.k8s.io/v1\nmetadata:\n  name: s\n"
        "spec:\n  driver: drv\n  nodeName: n\n"
        "  pool: {name: p, generation: 1, resourceSliceCount: 1}\n"
        "  devices:\n  - name: d\n    attributes:\n      drv/match: {strings: []}\n"
    )
    (tmp_path / "config.yaml").write_text(
        "- name: Bad\n  workloadTemplate:\n  - opcode: createAny\n"
        "    templatePath: slice.yaml\n  - opcode: createPods\n    count: 1\n"
        "    collectMetrics: true\n  workloads:\n  - name: one\n"
    )
    ((tc, w),) = p.select(
        load_test_cases(str(tmp_path / "config.yaml")), case="Bad", workload="one"
    )
    options = runner.RunOptions(timeout=60.0, gates=FeatureGates("1.37"))
    run = runner._WorkloadRun(tc, w, p.resolve(tc, w), options)
    with pytest.raises(InputError) as err:
        try:
            run.run()
        finally:
            run.finish()
    assert str(err.value.file).endswith("slice.yaml")
    assert "attributes.drv/match.strings: must not be empty if specified" in str(err.value)


def test_v137_list_attributes_bind_with_their_match_constraint() -> None:
    """listattributes (DRAListTypeAttributes): 32 requests whose ``matchAttribute`` over a
    ``strings`` list holds only among the devices sharing one value."""
    run = _run_137("listattributes/performance-config.yaml",
                   "SchedulingWithResourceClaimTemplateListAttributes", "fast")  # fmt: skip
    assert run.result.pods_bound == 1 and run.result.pods_unbound == 0
    (claim,) = [r.parse_claim(o) for (k, _), o in run.api.objects.items() if k == "ResourceClaim"]
    # the first 32 devices have no value in common with any other: only the last 32 match
    assert sorted(int(d.device.split("-")[1]) for d in claim.allocation or ()) == list(
        range(32, 64)
    )


def test_v137_a_podgroups_template_claim_is_shared_by_more_pods_than_it_may_reserve() -> None:
    """SharedPodGroupResourceClaimTemplate (DRAWorkloadResourceClaims): one claim from the
    template for the PodGroup, one device, every member bound.  Upstream's workload
    ``1podgroup_1000pods`` with 257 Pods: one more than a claim's ``reservedFor`` may name,
    so they bind only through the PodGroup's one entry (1000 proved no more, 4x slower)."""
    pods = RESERVED_FOR_MAX + 1
    run = _run_137("workloadresourceclaims/performance-config.yaml",
                   "SharedPodGroupResourceClaimTemplate", "1podgroup_1000pods",
                   measurePods=pods)  # fmt: skip
    assert run.result.pods_bound == pods and run.result.pods_unbound == 0
    claims = [o for (k, _), o in run.api.objects.items() if k == "ResourceClaim"]
    # allocResourceClaims' claim in "init", and the PodGroup's
    (group,) = [c for c in claims if c["metadata"]["namespace"] == "test"]
    assert [x["resource"] for x in group["status"]["reservedFor"]] == ["podgroups"]
