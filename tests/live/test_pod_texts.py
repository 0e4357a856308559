"""A watched Pod's JSON text (Delta.text) is read on the quick path with its sections
remembered: the Pod is, slot for slot, what parsing the decoded manifest gives."""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pytest

from kubesched.api import podquick
from kubesched.live import dispatch as dispatch_mod
from kubesched.live.dispatch import Dispatcher
from kubesched.live.informer import ADDED, Delta
from kubesched.scheduler import Scheduler
from tests.live.conftest import make_config, node
from tests.live.test_after_bind import SHAPES, created, slots


def dispatcher() -> Dispatcher:
    d = Dispatcher(Scheduler(make_config(leader=False), clock=time.monotonic))
    d.apply(Delta("Node", ADDED, None, node("n1")))
    return d


def watched(obj: dict[str, Any]) -> Delta:
    """The delta of a watch event as the Pod informer hands it on."""
    return Delta("Pod", ADDED, None, obj, text=msgspec.Raw(msgspec.json.encode(obj)))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_text_gives_what_the_parse_gives(shape: str) -> None:
    d = dispatcher()
    obj = created(**SHAPES[shape])
    d.apply(watched(obj))
    got = d.pods["default/p"]
    assert got.raw is obj
    assert slots(got) == slots(podquick.parse_pod(obj))


def test_the_pods_of_one_template_read_their_sections_once() -> None:
    d = dispatcher()
    a, b = created("a"), created("b")
    d.apply(watched(a))
    d.apply(watched(b))
    assert d.pods["default/a"].requests is d.pods["default/b"].requests
    assert sum(d.scheduler.queue.pending_pods().values()) == 2


def test_sections_start_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch_mod, "SECTIONS_RENEWED", 2)
    d = dispatcher()
    first = d.sections
    d.apply(watched(created("a")))
    d.apply(watched(created("b")))
    assert d.sections is not first


def test_a_text_the_quick_path_does_not_take_is_parsed_from_the_manifest() -> None:
    d = dispatcher()
    obj = created()
    del obj["kind"]  # the text names no kind: the quick path gives it up
    d.apply(watched(obj))
    assert slots(d.pods["default/p"]) == slots(podquick.parse_pod(obj))
    bad = created("bad")
    bad["spec"]["containers"] = []
    d.apply(watched(bad))
    assert d.skipped == 1 and "default/bad" not in d.pods
