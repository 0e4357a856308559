"""The allocator cuts branches that cannot succeed (``_Search.doomed``), and that changes no
answer: the same devices, the same ``None``, the same CEL runtime error as the full search."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from kubesched.api import resource as r
from kubesched.devices import allocator as al
from kubesched.devices import draoptions as opt
from kubesched.devices.pools import gather_pools
from tests.plugins._dra import DRIVER, claim, device_class, gpu, request, slice_

V1_37 = opt.Options(
    skip_unusable=True, keep_alternative=True, partitionable=True, consumable=True,
    pool_counters=True, checks_capacity=True, ordered=True, admin_access=True,
)  # fmt: skip
V1_35 = opt.Options(skip_unusable=True, partitionable=True, pool_counters=True, admin_access=True)
V1_34_INCUBATING = opt.Options(partitionable=True, admin_access=True)
FLAG = f'device.attributes["{DRIVER}"].flag'
"""A selector failing at run time on a device without the ``flag`` attribute."""


def _consuming(i: int, amounts: dict[str, int], **extra: Any) -> dict[str, Any]:
    d = gpu(i) | extra
    d["consumesCounters"] = [
        {"counterSet": "set", "counters": {c: {"value": str(v)} for c, v in amounts.items()}}
    ]
    return d


def _slices(
    devices: list[dict[str, Any]], counters: dict[str, int], options: opt.Options
) -> list[r.ResourceSlice]:
    shared = [{"name": "set", "counters": {c: {"value": str(v)} for c, v in counters.items()}}]
    if not options.pool_counters:  # v1.34: the counters beside the devices
        return [r.parse_slice(slice_("n1", devices, name="p-0", pool="p", sharedCounters=shared))]
    return [
        r.parse_slice(slice_("n1", devices, name="p-0", pool="p", count=2)),
        r.parse_slice(slice_("n1", [], name="p-1", pool="p", count=2, sharedCounters=shared)),
    ]


def _search(
    slices: list[r.ResourceSlice],
    claims: list[dict[str, Any]],
    options: opt.Options,
    in_use: set[al.DeviceId],
) -> al._Search:
    pools = gather_pools(slices, "n1", {}, options, slices)
    klass = r.parse_class(device_class())
    parsed = [r.parse_claim(c) for c in claims]
    return al._Search(pools, parsed, {DRIVER: klass}, in_use, options, math.inf, ("n1", {}))


def _answer(search: al._Search) -> object:
    try:
        search.prepare()
        if not search.one(0, 0, 0):
            return None
    except al.AllocationError as e:
        return f"error: {e}"
    return [[d.device for d in res] for res in search.results]


def test_a_branch_short_of_counters_is_cut() -> None:
    """Upstream's PartitionableBacktracking suite: the first device takes twice the memory
    of the others, so seven of eight fit only without it.  The full search tries every
    set of devices with the first (131 steps); the cut search gives it up at once."""
    devices = [_consuming(1, {"mem": 20})] + [_consuming(i, {"mem": 10}) for i in range(2, 9)]
    search = _search(_slices(devices, {"mem": 70}, V1_37), [claim("c", request(count=7))],
                     V1_37, set())  # fmt: skip
    assert _answer(search) == [[f"gpu-{i}" for i in range(2, 9)]]
    assert search.steps <= 15


def test_a_selector_failing_in_a_cut_branch_still_fails_the_search() -> None:
    """Three devices asked, two free: upstream's doomed branch still runs the selectors of
    both free devices, and the second one's fails."""
    devices = [gpu(0, flag={"bool": True}), gpu(1, flag={"bool": True}), gpu(2)]
    search = _search(
        [r.parse_slice(slice_("n1", devices))],
        [claim("c", request(count=3, selectors=(FLAG,)))],
        V1_37,
        {(DRIVER, "n1", "gpu-1")},
    )
    answer = _answer(search)
    assert isinstance(answer, str) and "CEL runtime error" in answer


def _random_case(
    rng: random.Random, options: opt.Options
) -> tuple[list[r.ResourceSlice], list[dict[str, Any]], set[al.DeviceId]]:
    counters = {"a": rng.randint(3, 12), "b": rng.randint(2, 8)}
    devices = []
    for i in range(rng.randint(3, 8)):
        extra: dict[str, Any] = {}
        if rng.random() < 0.8:
            extra["attributes"] = {"model": {"string": rng.choice(["x", "y"])},
                                   "index": {"int": i}}  # fmt: skip
            if rng.random() < 0.7:
                extra["attributes"]["flag"] = {"bool": rng.random() < 0.8}
        if options.consumable and rng.random() < 0.15:
            extra["allowMultipleAllocations"] = True
        if rng.random() < 0.8:
            amounts = {c: rng.randint(0, 4) for c in counters if rng.random() < 0.8}
            devices.append(_consuming(i, amounts or {"a": 1}, **extra))
        else:
            devices.append(gpu(i) | extra)
    claims = []
    for ci in range(rng.randint(1, 2)):
        reqs = []
        for ri in range(rng.randint(1, 2)):
            sels = (FLAG,) if rng.random() < 0.3 else ()
            reqs.append(request(f"r{ri}", count=rng.randint(1, 4), selectors=sels))
        cons = [{"matchAttribute": f"{DRIVER}/model"}] if rng.random() < 0.3 else None
        claims.append(claim(f"c{ci}", *reqs, constraints=cons))
    in_use = {(DRIVER, "p", f"gpu-{i}") for i in range(8) if rng.random() < 0.2}
    return _slices(devices, counters, options), claims, in_use


@pytest.mark.parametrize(
    "options", [V1_37, V1_35, V1_34_INCUBATING], ids=["v1.37", "v1.35", "v1.34"]
)
def test_cutting_changes_no_answer(options: opt.Options, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(29)
    cases = [_random_case(rng, options) for _ in range(400)]
    cut = [_answer(_search(*case[:2], options, case[2])) for case in cases]
    monkeypatch.setattr(al._Search, "doomed", lambda *_: False)
    full = [_answer(_search(*case[:2], options, case[2])) for case in cases]
    assert cut == full
    kinds = {type(a).__name__ if not isinstance(a, str) else "error" for a in full}
    assert kinds == {"NoneType", "list", "error"}  # every kind of answer is drawn
