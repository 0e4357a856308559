"""Devices alike share their selector results (:func:`kubesched.api.resource.parse_slice`'s
``shared``), and ``gather_pools`` groups every slice only for a pool that looks incomplete."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from kubesched.api import cel
from kubesched.api import resource as r
from kubesched.devices import draoptions as opt
from kubesched.devices.pools import gather_pools
from tests.plugins._dra import DRIVER, gpu, slice_

ATTRS = f'device.attributes["{DRIVER}"]'
SELECTORS = (
    f'{ATTRS}.model == "a100"',
    f"{ATTRS}.index >= 2",
    f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("40Gi"))',
    f"{ATTRS}.flag",  # a runtime error where the attribute is missing
    "device.allowMultipleAllocations",
)


def _device(rng: random.Random, i: int) -> dict[str, Any]:
    d = gpu(rng.randrange(3), mem=rng.choice(("40Gi", "80Gi")), model=rng.choice(("a100", "h100")))
    if rng.random() < 0.3:
        d["attributes"]["flag"] = {"bool": rng.random() < 0.5}
    if rng.random() < 0.2:
        d["allowMultipleAllocations"] = True
    d["name"] = f"dev-{i}"
    return d


def _answer(sel: cel.Selector, d: r.Device, multiple: bool) -> bool | str:
    try:
        return d.selects(sel, multiple)
    except Exception as e:  # CelRuntimeError: never cached
        return type(e).__name__


def test_alike_devices_share_selector_results() -> None:
    shared: r.SharedMatches = {}
    devices = [gpu(0), gpu(0) | {"name": "other"}, gpu(1)]
    a, b, c = r.parse_slice(slice_("n1", devices), shared=shared).devices
    (d,) = r.parse_slice(slice_("n2", [gpu(0)]), shared=shared).devices  # another slice
    (e,) = r.parse_slice(slice_("n3", [gpu(0)], driver="other.example.com"), shared=shared).devices
    assert a.matches is b.matches is d.matches
    assert a.unshared_matches is b.unshared_matches
    assert c.matches is not a.matches and e.matches is not a.matches
    sel = cel.compile_selector(f'{ATTRS}.model == "a100"', "x")
    assert a.selects(sel) and b.matches == {sel.expression: True}
    assert sel.expression not in c.matches and sel.expression not in e.matches
    (alone,) = r.parse_slice(slice_("n4", [gpu(0)])).devices  # without: its own results
    assert alone.matches is not a.matches and not alone.matches


def test_shared_results_are_each_devices_own() -> None:
    """Generated devices parsed with one ``shared`` answer every selector (both CEL views,
    errors included, in random order) as the same devices parsed alone."""
    selectors = [cel.compile_selector(s, "x") for s in SELECTORS]
    alike = 0
    for seed in range(20):
        rng = random.Random(seed)
        objs = [_device(rng, i) for i in range(12)]
        shared: r.SharedMatches = {}
        together = [
            d
            for k in range(3)
            for d in r.parse_slice(slice_(f"n{k}", objs[4 * k : 4 * k + 4]), shared=shared).devices
        ]
        alone = [r.parse_slice(slice_("n", [o])).devices[0] for o in objs]
        asks = [(i, s, m) for i in range(12) for s in selectors for m in (True, False)]
        rng.shuffle(asks)
        for i, sel, multiple in asks:
            assert _answer(sel, together[i], multiple) == _answer(sel, alone[i], multiple), (
                seed,
                i,
                sel.expression,
            )
        alike += 12 - len(shared)
    assert alike  # alike devices were drawn


class _Untouchable:
    """Every slice: fails when walked."""

    def __iter__(self) -> Iterator[r.ResourceSlice]:
        raise AssertionError("every slice walked for complete pools")


def test_gather_pools_groups_every_slice_only_for_an_incomplete_pool() -> None:
    options = opt.Options(skip_unusable=True, partitionable=True, pool_counters=True)
    mine = r.parse_slice(slice_("n1", [gpu(0)], name="a", pool="p"))
    pools = gather_pools([mine], "n1", {}, options, _Untouchable())
    assert [p.name for p in pools] == ["p"] and pools[0].complete is None
    half = r.parse_slice(slice_("n1", [gpu(1)], name="b", pool="q", count=2))
    rest = r.parse_slice(slice_("n2", [gpu(2)], name="c", pool="q", count=2))
    pools = gather_pools([mine, half], "n1", {}, options, [mine, half, rest])
    assert [(p.name, p.complete, [s.name for s in p.others]) for p in pools] == [
        ("p", None, []),
        ("q", True, ["c"]),
    ]
