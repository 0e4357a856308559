"""The quick Pod parse (:mod:`kubesched.api.podquick`) gives the full parse's Pod or gives
up: never another Pod, never a Pod the full parse refuses.  Checked on generated Pods with
every section, and on the same Pods with one value replaced by something odd (a wrong type,
an empty value, a null, a negative number, an integer beyond 64 bits) at a random place;
and on a Pod read after another that differs from it only by a value's type where an
encoding such as MessagePack does not tell them apart (YAML's ``!!set``, ``!!omap`` or
``!!timestamp`` beside a list or a text): the answer never depends on the Pods read before.
The JSON texts of all the generated Pods are read with one ``podquick.Sections``, as the
Pods of one List are, so remembered sections are checked too."""

from __future__ import annotations

import copy
import datetime
import json
import random
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import objects as api
from kubesched.api import podquick
from kubesched.api.errors import InputError
from kubesched.api.pods import parse_pod
from tests.coldstart_gen import pod

ODD: tuple[Any, ...] = (None, 0, 1, -1, 1.5, True, False, "", "x", "100m", [], {}, [{}], {"a": 1})
BIG: tuple[int, ...] = (2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, 10**120)
"""Integers at and beyond the 64 bits of the memo's encoding (and of the API's int64)."""
TWINS: tuple[tuple[Any, Any], ...] = (
    (["a"], {"a"}),  # !!set
    (["a", "b"], ("a", "b")),  # an !!omap's or !!pairs' entry
    ([], ()),
    ("2020-01-01", datetime.date(2020, 1, 1)),  # !!timestamp
    ("2020-01-01T00:00:00Z", datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)),
    (1, True),
    (1, 1.0),
)
"""A JSON value and a YAML value of another type that MessagePack may encode alike."""
SECTIONS = podquick.Sections()
"""The sections remembered over every text read here (one List's worth)."""


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


def _typed(obj: dict[str, Any]) -> api.Pod | bool | None:
    """The quick parse of ``obj``'s JSON text (a List's item), its flags
    checked against the manifest; False when ``obj`` has no JSON text (YAML's bytes)."""
    try:
        text = json.dumps(obj, indent=1).encode()
    except (TypeError, ValueError):
        return False
    if json.loads(text) != obj:  # a tuple written as a list: not this Pod's text
        return False
    typed = podquick.quick_pod(msgspec.Raw(text), SECTIONS)
    if typed is None:
        return None
    pod, given = typed
    spec = obj["spec"]
    assert given == (spec.get("priority") is not None, spec.get("preemptionPolicy") is not None)
    return pod


def _quick(obj: dict[str, Any]) -> api.Pod | None:
    """The quick parse of the decoded manifest ``obj``."""
    quick = podquick.quick_pod(obj)
    return None if quick is None else quick.pod


def _check(obj: dict[str, Any]) -> bool:
    """Compare the parses of ``obj`` (full, quick, typed); whether the quick one took it.
    The typed one takes what the quick one takes, never another Pod."""
    quick = _quick(copy.deepcopy(obj))
    typed = _typed(obj)
    try:
        full = parse_pod(copy.deepcopy(obj))
    except InputError:
        assert quick is None, "the quick path took a Pod the full parse refuses"
        assert not typed, "the typed path took a Pod the full parse refuses"
        return False
    assert all(hasattr(full, slot) for slot in api.Pod.__slots__)  # pods.new_pod sets each
    if quick is not None:
        assert quick == full
    if typed:
        assert typed == full
    if typed is not False:  # taken by the typed path exactly when by the quick one
        assert (typed is not None) == (quick is not None and obj.get("kind") == "Pod")
    assert podquick.parse_pod(copy.deepcopy(obj)) == full
    return quick is not None


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6))
def test_generated_pods(seed: int) -> None:
    _check(pod(seed, random.Random(seed), 4))


@settings(max_examples=1500, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6), st.sampled_from(ODD), st.booleans())
def test_pods_with_one_odd_value(seed: int, where: int, odd: Any, delete: bool) -> None:
    obj = pod(seed, random.Random(seed), 4)
    places = _places(obj)
    place = places[where % len(places)]
    parent = obj
    for step in place[:-1]:
        parent = parent[step]
    if delete and isinstance(parent, dict):
        del parent[place[-1]]
    else:
        parent[place[-1]] = copy.deepcopy(odd)
    _check(obj)


def _put(obj: dict[str, Any], place: tuple[Any, ...], value: Any) -> None:
    parent = obj
    for step in place[:-1]:
        parent = parent[step]
    parent[place[-1]] = copy.deepcopy(value)


@settings(max_examples=1000, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6), st.sampled_from(BIG))
def test_pods_with_an_integer_beyond_64_bits(seed: int, where: int, big: int) -> None:
    """Anywhere in a Pod, read or not: the same answer as the full parse, never an
    ``OverflowError`` from the memo's encoding."""
    obj = pod(seed, random.Random(seed), 4)
    places = _places(obj)
    _put(obj, places[where % len(places)], big)
    _check(obj)


@settings(max_examples=1000, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6), st.sampled_from(TWINS))
def test_a_pod_read_after_its_twin_gets_its_own_answer(
    seed: int, where: int, twins: tuple[Any, Any]
) -> None:
    """A Pod is read with its plain value first (its sections remembered), then with the
    twin value in the same place: each gets the full parse's answer."""
    obj = pod(seed, random.Random(seed), 4)
    places = _places(obj)
    place = places[where % len(places)]
    plain, twin = twins
    _put(obj, place, plain)
    _check(obj)
    _put(obj, place, twin)
    _check(obj)


@pytest.mark.parametrize(
    ("place", "plain", "twin"),
    [
        (("affinity",), {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}, None),
        (("tolerations",), [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], None),
        (("containers", 0, "image"), "2020-01-01", datetime.date(2020, 1, 1)),
        (("containers",), [{"name": "c"}], None),
    ],
)  # fmt: skip
def test_a_yaml_set_or_date_is_refused_after_an_equal_looking_list_or_text(
    place: tuple[Any, ...], plain: Any, twin: Any
) -> None:
    """The cases of the report: the quick parse took a Pod whose ``values`` were a
    ``!!set`` (or whose image was a date) when an equal-looking good Pod came first."""
    obj = pod(1, random.Random(1), 4)
    obj["spec"] = {"containers": [{"name": "c"}]}
    _put(obj["spec"], place, plain)
    assert _quick(copy.deepcopy(obj)) is not None  # remembered
    if twin is None:  # the innermost list made a set, or a tuple
        bad = copy.deepcopy(obj)
        inner = bad["spec"]
        for step in place:
            inner = inner[step]
        if place == ("affinity",):
            term = inner["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            term["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = {"a"}
        else:
            bad["spec"][place[0]] = tuple(inner)
    else:
        bad = copy.deepcopy(obj)
        _put(bad["spec"], place, twin)
    with pytest.raises(InputError):
        parse_pod(copy.deepcopy(bad))
    assert _quick(bad) is None
    with pytest.raises(InputError):
        podquick.parse_pod(bad)


def test_both_outcomes_happen() -> None:
    """The checks above mean something: most plain Pods take the quick path, some not."""
    took = [_check(pod(s, random.Random(s), 4)) for s in range(200)]
    assert 100 < sum(took) < 200


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("hostNetwork", 0),  # not a boolean, though it equals False
        ("tolerations", 0),
        ("preemptionPolicy", "Sometimes"),
        ("priority", 2**31),
        ("terminationGracePeriodSeconds", True),
    ],
)
def test_odd_spec_values_are_left_to_the_full_parse(field: str, value: Any) -> None:
    obj = pod(1, random.Random(1), 4)
    obj["spec"][field] = value
    assert _quick(obj) is None
    with pytest.raises(InputError):
        parse_pod(obj)


@pytest.mark.parametrize(
    ("taken", "odd"),
    [
        ({"image": "AAA="}, {"image": b"\x00\x00"}),  # text and bytes (YAML's !!binary)
        ({"resources": {"requests": {"cpu": 1}}}, {"resources": {"requests": {"cpu": True}}}),
        ({"ports": [{"containerPort": 80}]}, {"ports": [{"containerPort": 80.0}]}),
    ],
)
def test_remembered_containers_are_never_those_of_an_odd_equal_value(
    taken: dict[str, Any], odd: dict[str, Any]
) -> None:
    """A containers list worked out once is reused only for an equal list of equal types:
    a value equal in Python (``1 == True``) or in JSON text (bytes written as base64) is
    read afresh, and the full parse decides it."""
    plain = pod(1, random.Random(1), 4)
    plain["spec"] = {"containers": [{"name": "c", **taken}]}
    assert _check(plain)
    plain["spec"] = {"containers": [{"name": "c", **odd}]}
    _check(plain)


@pytest.mark.parametrize(
    ("taken", "odd"),
    [
        (
            {"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 1}]},
            {"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": True}]},
        ),
        (
            {
                "affinity": {
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}
                        ]
                    }
                }
            },
            {
                "affinity": {
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": True, "podAffinityTerm": {"topologyKey": "zone"}}
                        ]
                    }
                }
            },
        ),
    ],
)
def test_remembered_spec_sections_are_never_those_of_an_odd_equal_value(
    taken: dict[str, Any], odd: dict[str, Any]
) -> None:
    """Tolerations and affinity are remembered the same way as containers (``_check``
    compares the quick parse with the full one each time)."""
    plain = pod(1, random.Random(1), 4)
    plain["spec"] = {"containers": [{"name": "c"}], **taken}
    assert _check(plain)
    plain["spec"] = {"containers": [{"name": "c"}], **odd}
    _check(plain)


VOLUMES: tuple[dict[str, Any], ...] = (
    {"name": "data", "persistentVolumeClaim": {"claimName": "data-0", "readOnly": True}},
    {
        "name": "scratch",
        "ephemeral": {
            "volumeClaimTemplate": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "accessModes": ["ReadWriteOncePod"],
                    "storageClassName": "fast",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        },
    },
    {"name": "pd", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": False}},
    {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1"}},
    {"name": "rbd", "rbd": {"monitors": ["m1", "m2"], "image": "img", "pool": "p"}},
    {"name": "iscsi", "iscsi": {"targetPortal": "t:3260", "iqn": "iqn.x", "lun": 0}},
    {"name": "az", "azureDisk": {"diskName": "d", "diskURI": "uri"}},
    {"name": "cinder", "cinder": {"volumeID": "c-1"}},
    {"name": "cm", "configMap": {"name": "settings"}},
    {"name": "tmp", "emptyDir": {}},
    {"name": "token", "projected": {"sources": []}},
)
"""Every volume kind the parsers read, and some they pass over."""


def _with_volumes(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    obj = pod(seed, rng, 4)
    obj["spec"]["volumes"] = copy.deepcopy(rng.sample(VOLUMES, rng.randrange(1, 5)))
    return obj


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6), st.sampled_from(ODD), st.booleans())
def test_pods_with_volumes_and_one_odd_value(seed: int, where: int, odd: Any, delete: bool) -> None:
    """Volumes read by both parsers alike, with an odd value anywhere in the Pod (most
    often in its volumes): the quick path never takes what the full one refuses."""
    obj = _with_volumes(seed)
    assert _check(copy.deepcopy(obj)) or not podquick.quick_pod(copy.deepcopy(obj))
    places = [p for p in _places(obj) if p[:2] == ("spec", "volumes")] or _places(obj)
    place = places[where % len(places)]
    parent = obj
    for step in place[:-1]:
        parent = parent[step]
    if delete and isinstance(parent, dict):
        del parent[place[-1]]
    else:
        parent[place[-1]] = copy.deepcopy(odd)
    _check(obj)


def test_volumes_are_read_alike_and_kept_for_the_plugins() -> None:
    obj = _with_volumes(1)
    obj["spec"]["volumes"] = copy.deepcopy(list(VOLUMES))
    assert _check(copy.deepcopy(obj))
    full = parse_pod(obj)
    assert [v.kind for v in full.volumes] == [
        "persistentVolumeClaim",
        "ephemeral",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "rbd",
        "iscsi",
        "azureDisk",
        "cinder",
    ]
    assert full.volumes[0].claim == "data-0" and full.volumes[0].read_only
    assert full.volumes[4].monitors == ("m1", "m2") and full.volumes[4].pool == "p"


@pytest.mark.parametrize(
    ("volume", "path", "message"),
    [
        ({"name": "a", "persistentVolumeClaim": {}}, "persistentVolumeClaim.claimName", "Required"),
        (
            {"name": "a", "emptyDir": {}, "configMap": {"name": "x"}},
            "configMap",
            "may not specify more than 1 volume type",
        ),
        ({"name": "a", "ephemeral": {}}, "ephemeral.volumeClaimTemplate", "Required"),
        (
            {"name": "a", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["X"]}}}},
            "ephemeral.volumeClaimTemplate.spec.accessModes[0]",
            "Unsupported value",
        ),
        ({"name": "a", "gcePersistentDisk": {}}, "gcePersistentDisk.pdName", "Required"),
    ],
)
def test_an_invalid_volume_is_refused_with_its_path(
    volume: dict[str, Any], path: str, message: str
) -> None:
    obj = _with_volumes(2)
    obj["spec"]["volumes"] = [{"name": "ok", "emptyDir": {}}, volume]
    assert podquick.quick_pod(copy.deepcopy(obj)) is None
    with pytest.raises(InputError) as err:
        parse_pod(obj)
    assert f"spec.volumes[1].{path}" in str(err.value) and message in str(err.value)


def test_a_pods_own_resize_status_is_left_to_the_full_parse() -> None:
    """``status.resources`` (InPlacePodLevelResourcesVerticalScaling): the quick parse gives
    the Pod up, so the full one keeps its resize counts (``Pod.pod_level_resize``)."""
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "nodeName": "n0",
            "containers": [{"name": "a", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {
            "phase": "Running",
            "resources": {"requests": {"cpu": "2"}},
            "allocatedResources": {"cpu": "2"},
        },
    }
    assert not _check(obj)
    assert parse_pod(copy.deepcopy(obj)).pod_level_resize is not None
    del obj["status"]["resources"]
    assert _check(obj)  # allocatedResources alone: nothing upstream reads
