"""Small manifest builders shared by the api tests (plain dicts, as YAML/JSON would give)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "kind-like-cluster.json"
MI = 2**20
GI = 2**30


def pod_manifest(name: str = "p", **spec: Any) -> dict[str, Any]:
    """A minimal valid Pod manifest with ``spec`` fields merged in."""
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


def node_manifest(name: str = "n", **status: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": status}


def write(tmp_path: Path, text: str, name: str = "f.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def as_list(*items: dict[str, Any]) -> list[dict[str, Any]]:
    """A one-document stream holding a ``List`` of ``items``."""
    return [{"apiVersion": "v1", "kind": "List", "items": list(items)}]


def priority_class(name: str, value: Any, default: bool = False, **extra: Any) -> dict[str, Any]:
    """A ``scheduling.k8s.io/v1`` PriorityClass."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": default,
        **extra,
    }
