"""A small recording written by hand (no API server), for the reader's and replay's tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubesched.record import format as fmt

Obj = dict[str, Any]


def node(name: str, cpu: str = "2", memory: str = "8Gi") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {"kubernetes.io/hostname": name},
        },
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod(
    name: str,
    cpu: str = "500m",
    scheduler: str = "default-scheduler",
    on: str = "",
    memory: str = "",
) -> Obj:
    requests = {"cpu": cpu, **({"memory": memory} if memory else {})}
    spec: Obj = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}],
    }
    if on:
        spec["nodeName"] = on
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": "Running" if on else "Pending"},
    }


def write(
    directory: Path,
    snapshot: list[Obj],
    events: list[Obj],
    *,
    header: Obj | None = None,
    duration: float | None = None,
) -> Path:
    """Write a recording: events get ``seq`` numbers; the header's count matches."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [{"seq": i, **e} for i, e in enumerate(events, start=1)]
    last = lines[-1]["t"] if lines else 0.0
    h = {
        "apiVersion": fmt.API_VERSION,
        "kind": fmt.KIND,
        "formatVersion": fmt.FORMAT_VERSION,
        "recorder": "test",
        "server": "https://example:6443",
        "kubernetesVersion": "v1.34.2",
        "kinds": ["Node", "Pod"],
        "startedAt": "2026-01-01T00:00:00.000Z",
        "endedAt": "2026-01-01T00:01:00.000Z",
        "durationSeconds": duration if duration is not None else last + 1.0,
        "complete": True,
        "events": len(lines),
        "counts": {},
        "stopReason": "duration",
        **(header or {}),
    }
    (directory / fmt.HEADER).write_text(json.dumps(h))
    items = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": snapshot}
    (directory / fmt.SNAPSHOT).write_text(json.dumps(items))
    (directory / fmt.EVENTS).write_text("".join(json.dumps(e) + "\n" for e in lines))
    return directory


def bound(t: float, name: str, node_name: str, scheduler: str = "default-scheduler") -> Obj:
    return {
        "t": t,
        "type": fmt.POD_BOUND,
        "pod": f"default/{name}",
        "uid": f"uid-{name}",
        "node": node_name,
        "scheduler": scheduler,
        "bindSeconds": 0.5,
    }
