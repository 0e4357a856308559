"""A large ``kubectl`` List read by parts (:func:`kubesched.api.parse.load_cluster` with
:mod:`~kubesched.api.listitems` and :func:`~kubesched.api.podquick.quick_pod`) gives the
objects the usual reading gives, and any problem in it is named as the usual reading names
it.  The size from which a file is read by parts is lowered to one byte here."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api import beside, listitems, parse, podquick
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.cli import main
from tests.coldstart_gen import incoming, snapshot

SEEDS = (1, 2, 3)


def _deferred(pod: api.Pod) -> bool:
    """Whether ``pod.raw`` is still undecoded (read without decoding it)."""
    return type(api._raw_slot.__get__(pod)) is api.DeferredRaw


def _with_priority_classes(cluster: dict[str, Any]) -> dict[str, Any]:
    """``cluster`` with two PriorityClasses (policy Never), one the default, and Pods that
    name a class, one of them with its own policy, one with its own priority."""
    cluster = copy.deepcopy(cluster)
    pods = [o for o in cluster["items"] if o["kind"] == "Pod"]
    for p in pods[:4]:
        for key in ("priority", "priorityClassName", "preemptionPolicy"):
            p["spec"].pop(key, None)
    pods[0]["spec"]["priorityClassName"] = "high"
    pods[1]["spec"].update(priorityClassName="high", preemptionPolicy="PreemptLowerPriority")
    pods[2]["spec"]["priority"] = 7
    classes = [
        {
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
            "preemptionPolicy": "Never",
        },
        {
            "kind": "PriorityClass",
            "metadata": {"name": "usual"},
            "value": 10,
            "globalDefault": True,
            "preemptionPolicy": "Never",
        },
    ]
    cluster["items"] = classes + cluster["items"]
    return cluster


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """``load_cluster`` of ``path`` read by parts and the usual way (the result, or the
    error's text)."""
    out = []
    for size in (1, 2**40):
        monkeypatch.setattr(beside, "SIDE_BYTES", size)
        try:
            out.append(parse.load_cluster(str(path)))
        except InputError as err:
            out.append(str(err))
    return out[0], out[1]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_list_read_by_parts_gives_the_same_objects(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(_with_priority_classes(snapshot(seed)), indent=2))
    by_parts, usual = _both(path, monkeypatch)
    assert any(_deferred(p) for p in by_parts.pods)  # read by parts, and not decoded again
    assert not any(_deferred(p) for p in usual.pods)
    assert by_parts.nodes == usual.nodes
    assert by_parts.others == usual.others
    priorities = [(p.priority, p.preemption_policy) for p in by_parts.pods[:4]]
    own = (7, "PreemptLowerPriority")
    assert priorities == [(1000, "Never"), (1000, "PreemptLowerPriority"), own, (10, "Never")]
    assert by_parts.pods == usual.pods  # decodes every raw: equal manifests too


def _pod_item(cluster: dict[str, Any]) -> dict[str, Any]:
    return next(o for o in cluster["items"] if o["kind"] == "Pod")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("repeat", "already set in map"),
        ("nan", "NaN is not a JSON number"),
        ("deep", "nested deeper than"),
        ("quantity", "quantities must match"),
        ("twice", "duplicate Pod"),
        ("not an object", "must be a mapping"),
    ],
)
def test_a_problem_is_named_as_the_usual_reading_names_it(
    change: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = snapshot(1)
    item = _pod_item(cluster)
    text = ""
    if change == "quantity":
        item["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    elif change == "twice":
        cluster["items"].append(copy.deepcopy(item))
    elif change == "not an object":
        cluster["items"].append(5)
    elif change == "deep":
        item["spec"]["volumes"] = [{"name": "v", "x": json.loads("[" * 120 + "]" * 120)}]
    else:  # a key the typed reading skips, written twice; a NaN where no one reads
        item["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
        text = json.dumps(cluster)
        bad = '"emptyDir": {}, "emptyDir": {}' if change == "repeat" else '"emptyDir": NaN'
        text = text.replace('"emptyDir": {}', bad, 1)
    path = tmp_path / "cluster.json"
    path.write_text(text or json.dumps(cluster))
    by_parts, usual = _both(path, monkeypatch)
    assert isinstance(by_parts, str) and message in by_parts
    assert by_parts == usual


ODD: tuple[Any, ...] = (
    *(None, 0, -1, 1.5, True, "", "x", "100m", [], {}, [{}]),
    *(2**31, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, 10**120, 1e300),
)
"""Values put in a generated List's items: wrong types, empty values, and numbers at and
beyond the bounds of int32, int64 and the memo's encoding."""


def _places(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key and index path inside ``obj``."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((*path, k))
            out.extend(_places(v, (*path, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((*path, i))
            out.extend(_places(v, (*path, i)))
    return out


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10**6),
    where=st.integers(0, 10**6),
    odd=st.sampled_from(ODD),
    item=st.integers(0, 10**6),
)
def test_generated_lists_read_alike_by_parts(
    seed: int,
    where: int,
    odd: Any,
    item: int,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A generated List with one value replaced at a random place of one item (a Node, a
    Pod, a PriorityClass), valid or not: read by parts, the same objects or the same error
    as the usual reading (which never raises anything else); both orders of the readings,
    so that neither is helped by what the other remembered."""
    cluster = _with_priority_classes(snapshot(seed, n_nodes=3, n_pods=8))
    target = cluster["items"][item % len(cluster["items"])]
    places = _places(target)
    parent = target
    place = places[where % len(places)]
    for step in place[:-1]:
        parent = parent[step]
    parent[place[-1]] = odd
    path = tmp_path_factory.mktemp("list") / "cluster.json"
    path.write_text(json.dumps(cluster))
    by_parts, usual = _both(path, monkeypatch)
    assert by_parts == usual
    monkeypatch.setattr(beside, "SIDE_BYTES", 2**40)
    try:
        first: Any = parse.load_cluster(str(path))
    except InputError as err:
        first = str(err)
    assert first == usual


def test_a_toleration_of_10_to_the_30_seconds_is_refused_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case of the report: read by parts it was taken, read the usual way it raised
    ``OverflowError``.  ``tolerationSeconds`` is an int64: the API server refuses it."""
    cluster = snapshot(1, n_nodes=2, n_pods=4)
    pod = _pod_item(cluster)
    pod["spec"]["tolerations"] = [
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10**30}
    ]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(cluster))
    by_parts, usual = _both(path, monkeypatch)
    assert isinstance(by_parts, str) and by_parts == usual
    assert "spec.tolerations[0].tolerationSeconds: must be a 64-bit integer" in usual


def test_a_check_that_gives_no_answer_sends_the_file_the_usual_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = listitems.source.os.getpid()

    def failing_in_the_child(data: bytes) -> bytes:
        assert listitems.source.os.getpid() == parent
        return b"exact"

    monkeypatch.setattr(listitems, "_verdict", failing_in_the_child)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(snapshot(2)))
    by_parts, usual = _both(path, monkeypatch)
    assert not any(_deferred(p) for p in by_parts.pods)  # the verdict was not "exact"
    assert by_parts.pods == usual.pods


def test_a_deferred_manifest_is_decoded_once_and_kept_by_copies() -> None:
    text = json.dumps(_pod_item(snapshot(3))).encode()
    typed = podquick.quick_pod(podquick.Raw(text))
    assert typed is not None
    pod = typed[0]
    copied = pod.shallow_copy()
    assert _deferred(copied) and _deferred(pod)
    assert pod.raw == json.loads(text) and not _deferred(pod)
    assert pod.raw is pod.raw  # kept once decoded
    assert _deferred(copied)
    restored = pickle.loads(pickle.dumps(copied))
    assert not _deferred(restored) and restored == pod


def test_explain_answers_alike_by_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, pod = tmp_path / "cluster.json", tmp_path / "pod.json"
    cluster.write_text(json.dumps(_with_priority_classes(snapshot(1))))
    pod.write_text(json.dumps(incoming(1)))
    answers = []
    for size in (1, 2**40):
        monkeypatch.setattr(beside, "SIDE_BYTES", size)
        args = ["explain", "--cluster", str(cluster), "--pod", str(pod), "-o", "json"]
        assert main(args) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0] == answers[1]
    assert answers[0]["nodes"]
