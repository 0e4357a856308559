"""Good input files of every kind, and the hostile files every input slot must refuse, for
:mod:`tests.cli.test_bad_input`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
}
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
SCENARIO: dict[str, Any] = {
    "apiVersion": "kubesched.io/v1alpha1",
    "kind": "Scenario",
    "spec": {
        "seed": 1,
        "durationSeconds": 2,
        "drainSeconds": 2,
        "nodePools": [
            {"name": "cpu", "count": 2, "zones": ["z1"], "allocatable": {"cpu": "4", "pods": "9"}}
        ],
        "workloads": [
            {"name": "web", "count": 3, "ratePerSecond": 10, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            }}
        ],
    },
}  # fmt: skip
BENCH = [
    {
        "name": "Basic",
        "workloadTemplate": [
            {"opcode": "createNodes", "countParam": "$nodes", "nodeTemplatePath": "node.yaml"},
            {"opcode": "createPods", "countParam": "$pods", "podTemplatePath": "pod.yaml"},
        ],
        "workloads": [{"name": "w", "params": {"nodes": 1, "pods": 1}}],
    }
]
SWEEP = {
    "apiVersion": "kubesched.io/v1alpha1",
    "kind": "Sweep",
    "metadata": {"name": "s"},
    "spec": {"base": {"scenario": "scenario.yaml"}, "seeds": [1], "vary": {"seed": [1]}},
}
RESULTS = {"podsSubmitted": 0}
NODES_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn1,32000,131072,8,V100M16\n"
PODS_CSV = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,1024,1,1000\n"

GOOD: dict[str, str] = {
    "cluster": json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE]}),
    "pod": yaml.safe_dump(POD),
    "config": yaml.safe_dump(CONFIG),
    "scenario": yaml.safe_dump(SCENARIO),
    "bench": yaml.safe_dump(BENCH),
    "node": yaml.safe_dump({**NODE, "metadata": {"generateName": "n-"}}),
    "sweep": yaml.safe_dump(SWEEP),
    "results": json.dumps(RESULTS),
    "nodes_csv": NODES_CSV,
    "pods_csv": PODS_CSV,
    "kubeconfig": "this is not a kubeconfig",
}
"""Every input kind, valid (the kubeconfig is never reached unless a row asks for it)."""

NAMES = {"pod": "pod.yaml", "node": "node.yaml", "scenario": "scenario.yaml"}


def write_good(tmp: Path, **override: str | bytes) -> dict[str, str]:
    """Write every :data:`GOOD` file (``override`` replaces some) into ``tmp``; the paths by
    kind, plus ``dir`` (``tmp`` itself) and ``missing`` (a path under no directory)."""
    paths: dict[str, str] = {"dir": str(tmp), "missing": "/nonexistent-dir/out.json"}
    for kind, text in {**GOOD, **override}.items():
        path = tmp / NAMES.get(kind, f"{kind}.in")
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        paths[kind] = str(path)
    return paths


def scenario(**spec: Any) -> str:
    """The good scenario with ``spec`` fields replaced (``None`` deletes one)."""
    doc = json.loads(json.dumps(SCENARIO))
    for key, value in spec.items():
        if value is None:
            doc["spec"].pop(key, None)
        else:
            doc["spec"][key] = value
    return yaml.safe_dump(doc)


def workload(**fields: Any) -> list[dict[str, Any]]:
    """``spec.workloads`` with the good workload's ``fields`` replaced."""
    return [{**SCENARIO["spec"]["workloads"][0], **fields}]


def pool(**fields: Any) -> list[dict[str, Any]]:
    """``spec.nodePools`` with the good pool's ``fields`` replaced."""
    return [{**SCENARIO["spec"]["nodePools"][0], **fields}]


def pod_with(cpu: Any = "1", **spec: Any) -> str:
    """The good Pod requesting ``cpu``, with extra ``spec`` fields."""
    doc = json.loads(json.dumps(POD))
    doc["spec"]["containers"][0]["resources"]["requests"] = {"cpu": cpu}
    doc["spec"].update(spec)
    return yaml.safe_dump(doc)


def pod_doc(metadata: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """The good Pod as a mapping, with ``metadata`` and ``spec`` fields merged in."""
    doc = json.loads(json.dumps(POD))
    doc["metadata"].update(metadata or {})
    doc["spec"].update(spec)
    return doc


def scenario_json(**spec: Any) -> str:
    """:func:`scenario` written as JSON (fast to write and read when it is large)."""
    doc = json.loads(json.dumps(SCENARIO))
    for key, value in spec.items():
        if value is None:
            doc["spec"].pop(key, None)
        else:
            doc["spec"][key] = value
    return json.dumps(doc)


def cluster_with(**allocatable: Any) -> str:
    """The good snapshot with the node's allocatable replaced."""
    node = {**NODE, "status": {"allocatable": {"cpu": "4", "pods": "9", **allocatable}}}
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [node]})


# Hostile files: name -> (maker(tmp) -> path, expected substring or None).
Maker = Callable[[Path], str]


def _write(name: str, data: bytes) -> Maker:
    def make(tmp: Path) -> str:
        path = tmp / name
        path.write_bytes(data)
        return str(path)

    return make


def _fifo(tmp: Path) -> str:
    path = tmp / "fifo"
    os.mkfifo(path)
    return str(path)


def _sparse(tmp: Path) -> str:
    path = tmp / "huge.yaml"
    with open(path, "wb") as fh:
        fh.truncate(300 * 2**20)  # sparse: nothing is written
    return str(path)


def _secrets() -> bytes:
    return "".join(
        f"user{i}:x:{i}:{i}:secret-line-{i}:/home/u:/bin/sh\n" for i in range(300)
    ).encode()


HOSTILE: dict[str, tuple[Maker, str | None, bool]] = {
    # name: (maker, message substring, applies to CSV inputs too)
    "missing": (lambda tmp: str(tmp / "absent.yaml"), "no such file", True),
    "directory": (lambda tmp: str(tmp), "not a regular file", True),
    "fifo": (_fifo, "not a regular file", True),
    "dev-zero": (lambda tmp: "/dev/zero", "not a regular file", True),
    "over-size-limit": (_sparse, "the limit is", True),
    "not-utf8": (_write("latin1.yaml", b"name: caf\xe9\n"), "not UTF-8", True),
    "passwd-like": (_write("passwd", _secrets()), None, True),
    "deep-json": (_write("deep.json", b"[" * 100_000 + b"]" * 100_000), "nested deeper", False),
    "deep-yaml": (_write("deep.yaml", b"a: " + b"[" * 200 + b"]" * 200), "nested deeper", False),
    "duplicate-key": (
        _write("dup.yaml", b"kind: A\nkind: B\n"),
        'key "kind" already set in map',
        False,
    ),
    "json-nan": (_write("nan.json", b'{"kind": NaN}'), "NaN is not a JSON number", False),
    # Files of another kind: what they hold is not printed back (``hunter2`` never is).
    "env-like": (_write("app.env", b"DB_PASSWORD=hunter2\nAPI_KEY=hunter2\n"), None, True),
    "json-string": (_write("token.json", b'"TOKEN=hunter2"'), None, False),
    "list-of-strings": (_write("tokens.yaml", b"- TOKEN=hunter2\n"), None, False),
    "kind-secret": (_write("kind.yaml", b"kind: TOKEN=hunter2\n"), None, False),
}
"""Files no input slot of any command may read: each is refused with exit code 2."""
