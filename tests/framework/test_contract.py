"""The plugin contract in types: every registered plugin's extension points and capabilities
are what its methods and declarations say, and a timing wrapper keeps them."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.framework import contract
from kubesched.framework.conformance import default_cluster
from kubesched.framework.interface import Handle
from kubesched.framework.sampling import TimedPlugin
from kubesched.plugins.registry import full_registry, in_tree_registry

METHOD_OF = {"queue_sort": "sort_key"}


def _build(name: str) -> object:
    args = {"labelKey": "topology.kubernetes.io/zone"} if name not in in_tree_registry() else None
    handle = Handle(default_cluster(), rng=np.random.default_rng(0))
    return full_registry()[name](args, handle)


@pytest.mark.parametrize("name", sorted(full_registry()))
def test_points_are_the_methods_a_plugin_has(name: str) -> None:
    plugin = _build(name)
    for point in contract.POINT_PROTOCOLS:
        has = callable(getattr(plugin, METHOD_OF.get(point, point), None))
        assert contract.implements(plugin, point) == has, point


@pytest.mark.parametrize("name", sorted(full_registry()))
def test_a_timing_wrapper_keeps_points_and_capabilities(name: str) -> None:
    plugin = _build(name)
    wrapped = TimedPlugin(plugin, lambda *a: None)
    for point in contract.POINT_PROTOCOLS:
        if point != "queue_sort":  # QueueSort runs in the queue, never timed
            assert contract.implements(wrapped, point) == contract.implements(plugin, point)
    assert contract.is_node_only(wrapped) == contract.is_node_only(plugin)
    assert contract.is_row_local(wrapped) == contract.is_row_local(plugin)
    assert contract.locality_of(wrapped) == contract.locality_of(plugin)


def test_flags_are_read_not_just_found() -> None:
    class Declines:
        name = "Declines"
        node_only = False
        row_local = False

    assert not contract.is_node_only(Declines())
    assert not contract.is_row_local(Declines())
    caps = contract.ProfileCapabilities.of({"Declines": Declines()})
    assert not caps.node_only and not caps.row_local


def test_every_in_tree_plugin_is_named_in_the_names_module() -> None:
    from kubesched.config import names

    declared = {v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}
    assert declared == set(in_tree_registry())
    for name, factory in in_tree_registry().items():
        handle = Handle(default_cluster(), rng=np.random.default_rng(0))
        assert factory(None, handle).name == name


def test_a_post_filter_diagnosis_is_read_through_its_protocol() -> None:
    from collections import Counter

    from kubesched.framework.interface import unschedulable
    from kubesched.scheduler.types import Diagnosis

    absent = unschedulable("narrowed")
    d = Diagnosis(3, Counter(), set(), absent=absent)
    assert contract.diagnosed(d) == (None, absent)
    assert contract.diagnosed(None) == (None, None)


def test_the_typed_plugin_lists_are_what_the_plugins_implement() -> None:
    from kubesched.plugins import typecheck
    from kubesched.plugins.registry import Unmodelled

    plugins = [
        p
        for f in in_tree_registry().values()
        if not isinstance(
            p := f(None, Handle(default_cluster(), rng=np.random.default_rng(0))), Unmodelled
        )
    ]
    lists = {
        name: value
        for name, value in vars(typecheck).items()
        if name.isupper() and isinstance(value, tuple)
    }
    assert lists
    flags = {contract.NodeOnly, contract.RowLocal, contract.Located, contract.FilterDiagnosis}
    protocols = [
        value
        for value in vars(contract).values()
        if isinstance(value, type)
        and getattr(value, "_is_runtime_protocol", False)
        and value.__module__ == contract.__name__
        and not value.__name__.startswith("_")
        and value not in flags
    ]
    assert len(protocols) == 32  # a new Protocol gets its list in plugins/typecheck.py
    for protocol in protocols:
        name = "".join("_" + ch if ch.isupper() else ch for ch in protocol.__name__)
        want = {type(p) for p in plugins if isinstance(p, protocol)}
        assert set(lists.get(name.lstrip("_").upper(), ())) == want, protocol.__name__
