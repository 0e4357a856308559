"""Nodes, Pods and other objects made from templates: names, labels, rendering."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.bench import objects
from tests.bench.support import NODE, POD

GENERATED = re.compile(r"^node-[bcdfghjklmnpqrstvwxz2456789]{5}$")


def _manifest(tmp: Path, doc: object, name: str = "t.yaml") -> objects.Manifest:
    path = tmp / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return objects.Manifest(str(path))


def test_generated_node_names_are_seeded_and_get_a_hostname_label(tmp_path: Path) -> None:
    def names(seed: int) -> list[str]:
        taken: set[str] = set()
        maker = objects.NodeMaker(_manifest(tmp_path, NODE), objects.Names(seed),
                                  taken.__contains__, "unused-")  # fmt: skip
        out = []
        for i in range(20):
            node = maker.make(i, 20)
            taken.add(node.name)
            assert node.labels[objects.HOSTNAME_LABEL] == node.name
            assert node.allocatable["cpu"] == 4000
            out.append(node.name)
        return out

    first = names(1)
    assert all(GENERATED.match(n) for n in first)
    assert len(set(first)) == 20
    assert names(1) == first and names(2) != first


def test_a_taken_name_is_drawn_again() -> None:
    names = objects.Names(0)
    first = names.generate("x-", lambda n: False)
    again = objects.Names(0).generate("x-", lambda n: n == first)
    assert again != first and again.startswith("x-")


def test_nodes_without_template_or_name_use_upstreams_base_node() -> None:
    maker = objects.NodeMaker(None, objects.Names(0), lambda n: False, "node-0-")
    node = maker.make(0, 1)
    assert node.name.startswith("node-0-") and len(node.name) == len("node-0-") + 5
    assert node.allocatable == {"pods": 110, "cpu": 4000, "memory": 32 * 1024**3}


def test_indexed_templates_render_per_object(tmp_path: Path) -> None:
    node_text = (
        'kind: Node\nmetadata:\n  name: n-{{.Index}}\n  labels:\n    size: "{{.Count}}"\n'
        'status:\n  capacity:\n    cpu: "{{AddInt .Index 1}}"\n    example.com/acc-{{.Index}}: 1\n'
    )
    maker = objects.NodeMaker(_manifest(tmp_path, node_text), objects.Names(0),
                              lambda n: False, "x-")  # fmt: skip
    nodes = [maker.make(i, 3) for i in range(3)]
    assert [n.name for n in nodes] == ["n-0", "n-1", "n-2"]
    assert nodes[2].labels == {"size": "3", objects.HOSTNAME_LABEL: "n-2"}
    assert nodes[2].allocatable["cpu"] == 3000 and nodes[2].allocatable["example.com/acc-2"] == 1


def test_pods_get_namespace_uid_and_upstreams_signature_label(tmp_path: Path) -> None:
    maker = objects.PodMaker(_manifest(tmp_path, POD), "ns-1", objects.Names(0),
                             lambda n: False, signature_batch=2)  # fmt: skip
    pods = [maker.make(i, 5) for i in range(5)]
    assert {p.namespace for p in pods} == {"ns-1"}
    assert len({p.uid for p in pods}) == 5 and len({p.name for p in pods}) == 5
    assert [p.labels["signature"] for p in pods] == [
        "signature-label-0", "signature-label-0", "signature-label-1", "signature-label-1",
        "signature-label-2",
    ]  # fmt: skip
    assert pods[0].requests["cpu"] == 100
    pods[0].labels["x"] = "y"  # copies do not share their labels
    assert "x" not in pods[1].labels


def test_templated_pods_are_parsed_per_index(tmp_path: Path) -> None:
    text = yaml.safe_dump(POD).replace("generateName: pod-", "name: p-{{.Index}}-of-{{.Count}}")
    maker = objects.PodMaker(_manifest(tmp_path, text), "ns", objects.Names(0), lambda n: False)
    assert maker.make(3, 4).name == "p-3-of-4"
    assert "signature" not in maker.make(0, 4).labels


def test_a_template_without_name_or_generate_name_is_refused(tmp_path: Path) -> None:
    doc = {**POD, "metadata": {}}
    with pytest.raises(InputError, match="generateName is required"):
        objects.PodMaker(_manifest(tmp_path, doc), "ns", objects.Names(0), lambda n: False).make(
            0, 1
        )


@pytest.mark.parametrize(
    ("kind", "namespace", "strict", "want_ns", "error"),
    [
        ("Service", "shop", True, "shop", None),
        ("Service", "", True, None, "namespace not set"),
        ("PriorityClass", "shop", True, None, "cluster-scoped"),
        ("Node", "shop", False, "", None),  # churn ignores the namespace of cluster kinds
        ("DeviceTaintRule", "", True, "", None),  # resource.k8s.io: cluster-scoped
    ],
)
def test_make_object_checks_the_namespace_against_the_kind(
    kind: str, namespace: str, strict: bool, want_ns: str | None, error: str | None
) -> None:
    doc = {"kind": kind, "metadata": {"generateName": "web-"}}
    names = objects.Names(0)
    if error:
        with pytest.raises(InputError, match=error):
            objects.make_object(doc, namespace, names, lambda *a: False, "f", strict_scope=strict)
        return
    obj = objects.make_object(doc, namespace, names, lambda *a: False, "f", strict_scope=strict)
    assert obj["metadata"]["name"].startswith("web-") and "generateName" not in obj["metadata"]
    assert obj["metadata"].get("namespace", "") == want_ns


def test_generated_names_are_the_draws_of_random_choices() -> None:
    """:meth:`Names.generate` writes ``rng.choices(alphabet, k=5)`` out by hand: the same
    names for the same seed (so placements and reports do not move)."""
    import random

    names, rng = objects.Names(7), random.Random(7)
    for _ in range(200):
        want = "p-" + "".join(rng.choices(objects.NAME_ALPHABET, k=objects.RANDOM_LENGTH))
        assert names.generate("p-", lambda n: False) == want
