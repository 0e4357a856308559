"""The allocator's answers the device index keeps per node row and claim shape
(``DeviceIndex.answer``): over generated clusters, claims and changes of the devices in use,
a kept answer is always what the allocator would answer now, and the search is skipped."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from kubesched.api import resource as r
from kubesched.api.objects import Node
from kubesched.api.parse import parse_node
from kubesched.devices import allocator as al
from kubesched.devices import draindex as index
from kubesched.devices import draoptions as opt
from tests.devices.test_allocator_cut import FLAG, V1_34_INCUBATING, V1_35, V1_37
from tests.plugins._dra import DRIVER, claim, device_class, gpu, node, request, slice_

PCI = {"matchAttribute": "resource.kubernetes.io/pciRoot"}
V1_36 = V1_37._replace(distinct_every_device=False)


def _device(i: int, rng: random.Random) -> dict[str, Any]:
    d = gpu(i)
    d["attributes"]["resource.kubernetes.io/pciRoot"] = {"string": f"pci-{i % 2}"}
    if rng.random() < 0.15:
        d["attributes"]["flag"] = {"bool": rng.random() < 0.7}
    return d


def _cluster(
    rng: random.Random,
) -> tuple[list[tuple[int, Node]], list[r.ResourceSlice], dict[str, r.DeviceClass]]:
    rows = [(k, parse_node(node(f"n{k}"))) for k in range(4)]
    raw = [slice_(f"n{k}", [_device(i, rng) for i in range(rng.randint(2, 8))]) for k in range(4)]
    if rng.random() < 0.5:  # devices reaching every node: in use, they change every row
        shared = [_device(i, rng) | {"name": f"all-{i}"} for i in range(rng.randint(1, 4))]
        raw.append(slice_(None, shared, pool="everywhere", allNodes=True))
    slices = sorted((r.parse_slice(s) for s in raw), key=lambda s: s.name)
    return rows, slices, {DRIVER: r.parse_class(device_class())}


def _shape(rng: random.Random, n: int) -> list[r.ResourceClaim]:
    claims = []
    for ci in range(rng.randint(1, 2)):
        reqs = [
            request(
                f"r{ri}",
                count=rng.randint(1, 3),
                selectors=(FLAG,) if rng.random() < 0.1 else (),
            )
            for ri in range(rng.randint(1, 3))
        ]
        cons = [PCI] if rng.random() < 0.6 else None
        claims.append(claim(f"s{n}-c{ci}", *reqs, constraints=cons))
    return [r.parse_claim(c) for c in claims]


def _allocate(
    idx: index.DeviceIndex,
    row_node: tuple[int, Node],
    claims: list[r.ResourceClaim],
    classes: dict[str, r.DeviceClass],
    in_use: dict[al.DeviceId, int],
    options: opt.Options,
) -> object:
    row, n = row_node
    try:
        return al.allocate_in(
            idx.pools_of.get(row, []), claims, classes, in_use, options, node=(n.name, n.labels)
        )
    except al.AllocationError as e:
        return f"error: {e}"


def _use(
    idx: index.DeviceIndex, in_use: dict[al.DeviceId, int], dev: al.DeviceId, on: bool
) -> None:
    """``dev`` becomes used (``on``) or free, the index told as DeviceUse tells it."""
    if on and dev not in in_use:
        in_use[dev] = 1
        idx.on_use(dev, -1)
    elif not on and dev in in_use:
        del in_use[dev]
        idx.on_use(dev, 1)


def _walk(options: opt.Options, seed: int, steps: int = 40) -> tuple[int, int]:
    """Generated clusters and step sequences: each step changes the devices in use (a
    device taken or given back, or a row's answer taken whole, as Reserve does) and then
    answers a random claim shape on every row, kept where the index has an answer, else
    searched and kept.  Returns (rows answered from the index, rows searched)."""
    rng = random.Random(seed)
    hits = misses = 0
    for _ in range(6):
        rows, slices, classes = _cluster(rng)
        idx = index.DeviceIndex()
        in_use: dict[al.DeviceId, int] = {}
        idx.refresh((1,), slices, rows, 4, options)
        devices = [(s.driver, s.pool, d.name) for s in slices for d in s.devices]
        shapes = [_shape(rng, k) for k in range(3)]

        for _step in range(steps):
            roll = rng.random()
            if roll < 0.4:
                dev = rng.choice(devices)
                _use(idx, in_use, dev, dev not in in_use)
            elif roll < 0.6:
                claims = rng.choice(shapes)
                found = _allocate(idx, rng.choice(rows), claims, classes, in_use, options)
                if isinstance(found, list):
                    for res in found:
                        for d in res:
                            _use(idx, in_use, d.device_id, True)
            claims = rng.choice(shapes)
            kept = idx.answers_for(tuple(json.dumps(c.raw["spec"]) for c in claims))
            for row_node in rows:
                plain = _allocate(idx, row_node, claims, classes, in_use, options)
                hit = idx.answer(kept, row_node[0])
                if hit is None:
                    misses += 1
                    if not isinstance(plain, str):
                        idx.keep(kept, row_node[0], plain)  # type: ignore[arg-type]
                    continue
                hits += 1
                assert hit[0] == plain, (seed, row_node[1].name, in_use)
    return hits, misses


@pytest.mark.parametrize(
    "options",
    [V1_37, V1_36, V1_35, V1_34_INCUBATING, opt.V1_34],
    ids=["v1.37", "v1.36", "v1.35", "v1.34-incubating", "v1.34"],
)
def test_a_kept_answer_is_the_allocators_answer_now(options: opt.Options) -> None:
    hits, misses = _walk(options, 291)
    assert hits > misses > 0  # most rows answered from the index, some searched


def test_a_device_becoming_used_or_free_drops_the_answers_of_the_rows_it_reaches() -> None:
    rng = random.Random(5)
    rows = [(k, parse_node(node(f"n{k}"))) for k in range(3)]
    raw = [slice_(f"n{k}", [_device(i, rng) for i in range(4)]) for k in range(3)]
    raw.append(slice_(None, [gpu(9)], pool="everywhere", allNodes=True))
    slices = sorted((r.parse_slice(s) for s in raw), key=lambda s: s.name)
    idx = index.DeviceIndex()
    idx.refresh((1,), slices, rows, 3, V1_37)
    kept = idx.answers_for(("shape",))
    for row, _ in rows:
        idx.keep(kept, row, None)
    idx.on_use((DRIVER, "n1", "gpu-0"), -1)  # a device of n1 only
    assert [idx.answer(kept, row) for row, _ in rows] == [(None,), None, (None,)]
    idx.keep(kept, 1, None)
    idx.on_use((DRIVER, "n1", "gpu-0"), 1)  # free again: also a change
    assert idx.answer(kept, 1) is None
    idx.keep(kept, 1, None)
    idx.on_use((DRIVER, "everywhere", "gpu-9"), -1)  # reaches every node
    assert [idx.answer(kept, row) for row, _ in rows] == [None, None, None]
    idx.keep(kept, 2, None)
    assert idx.answer(idx.answers_for(("other",)), 2) is None  # per shape
    idx.refresh((2,), slices, rows, 3, V1_37)  # slices, classes or nodes changed
    assert idx.answer(idx.answers_for(("shape",)), 2) is None
