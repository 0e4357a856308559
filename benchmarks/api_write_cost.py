"""kube-apiserver's and etcd's CPU per write, by body encoding, Accept and transport.

Binds (``pods/binding``) and ``events.k8s.io/v1`` Events -- the two writes a scheduler sends
per Pod -- in JSON and in Kubernetes' protobuf, answered in JSON or protobuf, pipelined on 8
HTTP/1.1 TLS connections or over HTTP/2 through live mode's own ``WritesInFlight`` (libcurl):
one control plane (``oracle/controlplane.sh``), 100 Nodes and ``--pods`` Pods nobody
schedules, then interleaved chunks of ``--chunk`` writes per variant; each chunk's
kube-apiserver and etcd CPU (``/proc``) per write.  Not a test; benchmarks/RESULTS.md,
h/live37, has its figures (no variant was consistently cheaper on a loaded host).

    ORACLE_BIN=oracle/bin flock /tmp/bench.lock .venv/bin/python benchmarks/api_write_cost.py \
        --pods 9000 --chunk 1000

The protobuf bodies come from a small encoder of the ``runtime.Unknown`` envelope (magic
``k8s\\0``, ``typeMeta``, ``raw``) for exactly these two kinds, field numbers from k8s.io/api
v0.34's ``generated.proto``; a Go program marshalling the same objects with apimachinery's
serializer gave the same non-empty fields.  It is kept here, not in ``kubesched.live``: the
product sends JSON until a quiet run shows protobuf cheaper for the server.
"""

from __future__ import annotations

import argparse
import datetime
import json
import socket
import ssl
import statistics
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _upstream_api as ua

from kubesched.live.client import _Connection, connect

T = Path(__file__).resolve().parent / "templates"

# ---- the protobuf encoder -----------------------------------------------------------------

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


class Unencodable(ValueError):
    """A body holds a key or value this encoder does not know how to write."""


# A message's schema: JSON key -> (field number, how to write its value).  How: "s" a string,
# "i" a varint (int32/int64 >= 0), "t" a MicroTime from RFC 3339 text, or a nested schema.
Schema = Mapping[str, tuple[int, Any]]

OBJECT_META: Schema = {
    "name": (1, "s"),
    "generateName": (2, "s"),
    "namespace": (3, "s"),
    "uid": (5, "s"),
    "resourceVersion": (6, "s"),
}
OBJECT_REFERENCE: Schema = {
    "kind": (1, "s"),
    "namespace": (2, "s"),
    "name": (3, "s"),
    "uid": (4, "s"),
    "apiVersion": (5, "s"),
    "resourceVersion": (6, "s"),
    "fieldPath": (7, "s"),
}
BINDING: Schema = {"metadata": (1, OBJECT_META), "target": (2, OBJECT_REFERENCE)}
"""core/v1 ``Binding``."""
EVENT: Schema = {
    "metadata": (1, OBJECT_META),
    "eventTime": (2, "t"),
    "reportingController": (4, "s"),
    "reportingInstance": (5, "s"),
    "action": (6, "s"),
    "reason": (7, "s"),
    "regarding": (8, OBJECT_REFERENCE),
    "related": (9, OBJECT_REFERENCE),
    "note": (10, "s"),
    "type": (11, "s"),
}
"""events.k8s.io/v1 ``Event`` (no ``series``: live mode writes each occurrence once)."""

SCHEMAS: Mapping[tuple[str, str], Schema] = {
    ("v1", "Binding"): BINDING,
    ("events.k8s.io/v1", "Event"): EVENT,
}
"""(apiVersion, kind) -> the message's schema: what :func:`encode` can write."""


def _varint(n: int) -> bytes:
    if n < 0:
        raise Unencodable(f"negative varint {n}")
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _micro_time(text: Any) -> bytes:
    """A ``MicroTime`` message from its RFC 3339 text (``2026-12-07T18:00:00.123456Z``)."""
    if not isinstance(text, str):
        raise Unencodable(f"MicroTime {text!r}: not a string")
    try:
        t = datetime.datetime.fromisoformat(text)
    except ValueError as e:
        raise Unencodable(f"MicroTime {text!r}: {e}") from None
    if t.tzinfo is None:
        raise Unencodable(f"MicroTime {text!r}: no time zone")
    seconds = (t.replace(microsecond=0) - _EPOCH) // datetime.timedelta(seconds=1)
    out = bytes([1 << 3]) + _varint(seconds) if seconds else b""
    if t.microsecond:
        out += bytes([2 << 3]) + _varint(t.microsecond * 1000)
    return out


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _message(schema: Schema, obj: Any, where: str) -> bytes:
    if not isinstance(obj, Mapping):
        raise Unencodable(f"{where}: not an object")
    parts = []
    for key, value in obj.items():
        spec = schema.get(key)
        if spec is None:
            raise Unencodable(f"{where}.{key}: not encodable here")
        number, how = spec
        if value is None:
            continue
        if how == "s":
            if not isinstance(value, str):
                raise Unencodable(f"{where}.{key}: not a string")
            parts.append((number, _field(number, value.encode())))
        elif how == "t":
            parts.append((number, _field(number, _micro_time(value))))
        else:
            parts.append((number, _field(number, _message(how, value, f"{where}.{key}"))))
    parts.sort(key=lambda p: p[0])  # field order, as upstream's marshalling writes them
    return b"".join(p[1] for p in parts)


def encode_pb(body: Mapping[str, Any]) -> bytes:
    """``body`` (a JSON object with ``apiVersion`` and ``kind`` of :data:`SCHEMAS`) in
    Kubernetes' protobuf envelope; :class:`Unencodable` when it cannot be written exactly."""
    api_version, kind = body.get("apiVersion"), body.get("kind")
    schema = SCHEMAS.get((str(api_version), str(kind)))
    if schema is None:
        raise Unencodable(f"{api_version}/{kind}: no protobuf schema")
    fields = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
    raw = _message(schema, fields, str(kind))
    type_meta = _field(1, str(api_version).encode()) + _field(2, str(kind).encode())
    return MAGIC + _field(1, type_meta) + _field(2, raw)


# ---- the measurement ----------------------------------------------------------------------


def cp_cpu(d: Path) -> tuple[float, float]:
    return tuple(ua.cpu_seconds(int((d / f"{n}.pid").read_text())) for n in ("apiserver", "etcd"))


class Pipe:
    def __init__(self, d: Path, n: int = 8) -> None:
        ports = dict(w.split("=") for w in (d / "ports").read_text().split() if "=" in w)
        self.addr = ("127.0.0.1", int(ports["APISERVER_PORT"]))
        self.tok = (d / "tokens.csv").read_text().split(",")[0]
        self.ctx = ssl.create_default_context(cafile=str(d / "pki" / "ca.crt"))
        self.ctx.set_alpn_protocols(["http/1.1"])
        self.conns = []
        for _ in range(n):
            s = socket.create_connection(self.addr)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns.append(_Connection(self.ctx.wrap_socket(s, server_hostname="127.0.0.1")))

    def post(
        self, reqs: list[tuple[str, bytes]], ctype: str, accept: str, batch: int = 16
    ) -> list[int]:
        codes = []
        for i in range(0, len(reqs), batch * len(self.conns)):
            group = reqs[i : i + batch * len(self.conns)]
            shares = [group[j :: len(self.conns)] for j in range(len(self.conns))]
            for c, share in zip(self.conns, shares, strict=True):
                data = b"".join(
                    f"POST {p} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.tok}\r\n"
                    f"Content-Type: {ctype}\r\nAccept: {accept}\r\nUser-Agent: mb\r\n"
                    f"Content-Length: {len(b)}\r\n\r\n".encode()
                    + b
                    for p, b in share
                )
                if data:
                    c.sock.sendall(data)
            for c, share in zip(self.conns, shares, strict=True):
                for _ in share:
                    st, body, _, _ = c.answer()
                    codes.append(st)
                    if st >= 300 and len(codes) < 3:
                        print(st, body[:300], file=sys.stderr)
        return codes


def binding(ns: str, name: str, uid: str, node: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": ns, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def event(ns: str, name: str, uid: str, node: str, i: int) -> dict:
    now = time.time_ns() + i
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{now:x}", "namespace": ns},
        "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S.123456Z", time.gmtime()),
        "reportingController": "kubesched",
        "reportingInstance": "kubesched-host",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
        "note": f"Successfully assigned {ns}/{name} to {node}",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name, "uid": uid},
    }


JSON, PB = "application/json", CONTENT_TYPE


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=4000)
    ap.add_argument("--chunk", type=int, default=500)
    a = ap.parse_args()
    with ua.control_plane(None) as d:
        kc = str(d / "admin.kubeconfig")
        ua.burst(
            d, "nodes", "--template", str(T / "node-default.yaml"), "--count", "100", timeout=300
        )
        ns = "mb"
        ua.burst(
            d,
            "pods",
            "--template",
            str(T / "pod-default.yaml"),
            "--scheduler-name",
            "none",
            "--count",
            str(a.pods),
            "--namespace",
            ns,
            "--no-wait",
            timeout=600,
        )
        cl = connect(kubeconfig=kc, qps=0, burst=1)
        pods, cont = [], ""
        while True:
            q = {"limit": 1000, **({"continue": cont} if cont else {})}
            page = cl.request("GET", f"/api/v1/namespaces/{ns}/pods", query=q)
            pods += [(p["metadata"]["name"], p["metadata"]["uid"]) for p in page["items"]]
            cont = page["metadata"].get("continue") or ""
            if not cont:
                break
        nodes = cl.request("GET", "/api/v1/nodes")["items"]
        node_names = [n["metadata"]["name"] for n in nodes]
        pipe = Pipe(d)
        time.sleep(3)
        res: dict[str, list[float]] = {}

        def h2(reqs):
            done = threading.Semaphore(0)
            errs = []

            def cb(e):
                if e is not None:
                    errs.append(e)
                done.release()

            for p, body in reqs:
                cl.writes.submit("POST", p, body, answered=cb)
            for _ in reqs:
                done.acquire()
            assert not errs, errs[:3]
            return [201] * len(reqs)

        def run_variant(name, reqs_objs, how):
            time.sleep(0.5)
            c0 = cp_cpu(d)
            if how == "h2":
                codes = h2(reqs_objs)
            else:
                ct, acc, q = how
                reqs = [
                    (p + q, msgspec.json.encode(b) if ct == JSON else encode_pb(b))
                    for p, b in reqs_objs
                ]
                codes = pipe.post(reqs, ct, acc)
            c1 = cp_cpu(d)
            assert all(c == 201 for c in codes), (name, [c for c in codes if c != 201][:5])
            res.setdefault(name + " apiserver", []).append((c1[0] - c0[0]) / len(reqs_objs) * 1000)
            res.setdefault(name + " etcd", []).append((c1[1] - c0[1]) / len(reqs_objs) * 1000)

        variants = [
            ("bind h1 json", (JSON, JSON, "")),
            ("bind h1 pb", (PB, PB, "")),
            ("bind h2 json", "h2"),
        ]
        ev_variants = [
            ("event h1 json", (JSON, JSON, "")),
            ("event h1 pb", (PB, PB, "")),
            ("event h1 json/pb-accept", (JSON, PB, "")),
            ("event h2 json", "h2"),
        ]
        pos = 0
        chunk = a.chunk
        while pos + chunk * len(variants) <= len(pods):
            for name, how in variants:
                part = pods[pos : pos + chunk]
                pos += chunk
                objs = [
                    (
                        f"/api/v1/namespaces/{ns}/pods/{pn}/binding",
                        binding(ns, pn, uid, node_names[j % len(node_names)]),
                    )
                    for j, (pn, uid) in enumerate(part)
                ]
                run_variant(name, objs, how)
        for r in range(4):
            for name, how in ev_variants:
                objs = []
                for j in range(chunk):
                    pn, uid = pods[(r * chunk + j) % len(pods)]
                    objs.append(
                        (
                            f"/apis/events.k8s.io/v1/namespaces/{ns}/events",
                            event(ns, pn, uid, "n", j),
                        )
                    )
                run_variant(name, objs, how)
        # check a protobuf-bound Pod and a protobuf Event read back as JSON
        got = cl.request("GET", f"/api/v1/namespaces/{ns}/pods/{pods[chunk][0]}")
        print("pb-bound pod nodeName:", got["spec"].get("nodeName"), file=sys.stderr)
        evs = cl.request(
            "GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", query={"limit": 20000}
        )
        print("events:", len(evs["items"]), json.dumps(evs["items"][-1])[:600], file=sys.stderr)
        for key, v in res.items():
            print(
                f"{key}: median {statistics.median(v):.3f} ms/write, "
                f"chunks {[round(x, 3) for x in v]}"
            )
        print("load", Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
