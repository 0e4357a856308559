"""A test API server speaking kube-apiserver's wire protocol for what kubesched and kubectl use.

Plain HTTP on loopback, HTTP/1.1.  Served: ``/version``, legacy discovery (``/api``,
``/apis``, ``/api/v1``, ``/apis/G/V``), and for every resource of
:data:`fakestore.RESOURCES` list (JSON ``XList`` with ``metadata.resourceVersion``,
``limit``/``continue`` pages -- except that a list at ``resourceVersion=0`` is answered whole,
as kube-apiserver's watch cache does (its ``computeListLimit``), unless ``watch_cache`` is
False --, label and field selectors, ``meta.k8s.io/v1 Table`` when kubectl
asks for one), watch (chunked ``{"type", "object"}`` lines from a resourceVersion, ``ERROR``
events with a 410 Status when that version was compacted), get, create, update (optimistic
concurrency), merge / strategic-merge patch, delete, the ``status`` subresource and the Pod
``binding`` subresource.  Errors are ``Status`` objects with upstream codes and reasons.

Test controls: :meth:`FakeApiServer.fail` injects error codes (409, 429 with Retry-After,
500, ...) on matching requests; :meth:`FakeApiServer.delay` holds matching requests back
(:meth:`FakeApiServer.slow_bind`: a bind written after the client timed out);
``store.drop_watches()`` cuts open watches; ``store.compact()`` makes old resourceVersions
410 Gone; ``with store.outage(): ...`` does both around the block's changes at one instant
(so that they are only seen by relisting).
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.live.fakestore import (
    RESOURCES,
    ApiStatusError,
    Obj,
    Resource,
    Store,
    matches,
    status_object,
)

MAX_WATCH_SECONDS = 30.0


class Server(ThreadingHTTPServer):
    """A threading HTTP server with a real API server's listen backlog: the standard
    library's 5 overflows when a scheduler opens its watches, Lease and binding
    connections at once on a loaded machine, and a dropped SYN is a 1 s connect stall."""

    request_queue_size = 1024
    daemon_threads = True


@dataclass
class Fault:
    """Answer ``code`` to the next ``times`` requests whose ``METHOD path`` matches."""

    pattern: re.Pattern[str]
    code: int
    times: int
    retry_after: int | None = None


def _resolve(parts: list[str]) -> tuple[Resource, str, str, str]:
    """(resource, namespace, name, subresource) of a path below ``/api/v1`` or ``/apis/G/V``."""
    group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    for r in RESOURCES:
        if r.group == group and r.version == version and rest and r.plural == rest[0]:
            name = rest[1] if len(rest) > 1 else ""
            sub = rest[2] if len(rest) > 2 else ""
            return r, ns, name, sub
    raise ApiStatusError(404, "the server could not find the requested resource", "NotFound")


def rbac_verb(method: str, name: str, query: dict[str, str]) -> str:
    """The RBAC verb an API request needs (``GET`` of a collection is ``list``, or ``watch``)."""
    if method == "GET":
        if name:
            return "get"
        return "watch" if query.get("watch") in ("true", "1") else "list"
    if method == "DELETE" and not name:
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]


def _table(res: Resource, items: list[Obj], rv: str) -> Obj:
    cols = ["Name"]
    if res.kind == "Pod":
        cols += ["Status", "Node"]
    elif res.kind == "Node":
        cols += ["Status"]
    rows = []
    for o in items:
        cells: list[Any] = [o["metadata"]["name"]]
        if res.kind == "Pod":
            cells += [o.get("status", {}).get("phase", ""), o["spec"].get("nodeName") or "<none>"]
        elif res.kind == "Node":
            cells += ["Ready"]
        meta = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1"}
        rows.append({"cells": cells, "object": {**meta, "metadata": o["metadata"]}})
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": [
            {
                "name": c,
                "type": "string",
                "format": "name" if c == "Name" else "",
                "description": c,
                "priority": 0,
            }
            for c in cols
        ],
        "rows": rows,
    }


def _discovery(group: str, version: str) -> Obj:
    res = []
    for r in RESOURCES:
        if r.group != group or r.version != version:
            continue
        verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
        res.append(
            {
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": verbs,
                "shortNames": list(r.short_names),
            }
        )
        if r.kind == "Pod":
            res.append(
                {
                    "name": "pods/binding",
                    "singularName": "",
                    "namespaced": True,
                    "kind": "Binding",
                    "verbs": ["create"],
                }
            )
            res.append(
                {
                    "name": "pods/status",
                    "singularName": "",
                    "namespaced": True,
                    "kind": "Pod",
                    "verbs": ["get", "patch", "update"],
                }
            )
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": res}


def _groups() -> Obj:
    groups: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.group and r.version not in groups.setdefault(r.group, []):
            groups[r.group].append(r.version)
    out = []
    for g, versions in groups.items():
        vs = [{"groupVersion": f"{g}/{v}", "version": v} for v in versions]
        out.append({"name": g, "versions": vs, "preferredVersion": vs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


class FakeApiServer:
    """The server on ``127.0.0.1:port`` (``port`` 0 picks one), serving on a thread."""

    def __init__(self, port: int = 0) -> None:
        self.store = Store()
        self.watch_cache = True
        """Answer lists at ``resourceVersion=0`` whole, ignoring ``limit`` (False: page them,
        as kube-apiserver with ``--watch-cache=false``)."""
        self.faults: list[Fault] = []
        self.delays: list[
            tuple[re.Pattern[str], float, list[int], Callable[[], object] | None]
        ] = []
        self._faults_lock = threading.Lock()
        server = self

        class Handler(_Handler):
            api = server

        self.httpd = Server(("127.0.0.1", port), Handler)
        self.port: int = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def fail(self, pattern: str, code: int, times: int = 1, retry_after: int | None = None) -> None:
        """Answer ``code`` to the next ``times`` requests matching ``pattern`` (a regex searched
        in ``"METHOD /path?query User-Agent"``)."""
        with self._faults_lock:
            self.faults.append(Fault(re.compile(pattern), code, times, retry_after))

    def delay(
        self,
        pattern: str,
        seconds: float,
        times: int = 1,
        until: Callable[[], object] | None = None,
    ) -> None:
        """Hold the next ``times`` requests matching ``pattern`` for ``seconds`` before
        serving them (a slow API server); with ``until``, only until it turns true."""
        with self._faults_lock:
            self.delays.append((re.compile(pattern), seconds, [times], until))

    def slow_bind(self, pod: str, seconds: float, namespace: str = "default") -> None:
        """The next bind of ``pod`` is written ``seconds`` late, whether or not the client is
        still waiting (an API server slower than the client's timeout: the write lands after
        the client gave up, and the client never learns the outcome)."""
        self.delay(rf"POST /api/v1/namespaces/{namespace}/pods/{pod}/binding ", seconds)

    def hold(self, line: str) -> None:
        """Wait as a matching :meth:`delay` says."""
        with self._faults_lock:
            found = None
            for pattern, seconds, left, until in self.delays:
                if left[0] > 0 and pattern.search(line):
                    left[0] -= 1
                    found = (seconds, until)
                    break
        if found is None:
            return
        deadline = time.monotonic() + found[0]
        while time.monotonic() < deadline and not (found[1] is not None and found[1]()):
            time.sleep(0.01)

    def take_fault(self, line: str) -> Fault | None:
        with self._faults_lock:
            for f in self.faults:
                if f.times > 0 and f.pattern.search(line):
                    f.times -= 1
                    return f
        return None

    def kubeconfig(self) -> str:
        """A kubeconfig (YAML text) pointing at this server, no credentials."""
        return self.kubeconfig_for(self.url)

    @staticmethod
    def kubeconfig_for(url: str) -> str:
        """A kubeconfig (YAML text) for ``url``, no credentials."""
        return (
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
            f"    server: {url}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n"
            "    user: fake\ncurrent-context: fake\nusers:\n- name: fake\n  user: {}\n"
        )

    def close(self) -> None:
        self.store.stop()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    api: FakeApiServer

    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    # ------------------------------------------------------------------ plumbing
    def _send(self, code: int, body: Obj, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(code, json.dumps(body).encode(), headers)

    def _send_bytes(self, code: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Obj:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return {}
        ctype = self.headers.get("Content-Type", "application/json")
        if "json" not in ctype:  # no protobuf here: 415, as a server without it would say
            raise ApiStatusError(415, f"unsupported media type {ctype}", "UnsupportedMediaType")
        try:
            data: Obj = json.loads(raw or b"{}")
        except ValueError as e:
            raise ApiStatusError(400, f"invalid JSON: {e}", "BadRequest") from None
        return data

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            body = self._body()  # always drain it: DELETE carries DeleteOptions
            agent = self.headers.get("User-Agent", "")
            line = f"{method} {self.path} {agent}"
            self.api.hold(line)
            fault = self.api.take_fault(line)
            if fault is not None:
                extra = {"Retry-After": str(fault.retry_after)} if fault.retry_after else None
                err = ApiStatusError(fault.code, f"injected {fault.code}")
                self._send(fault.code, err.status(), extra)
                return
            self._route(method, url.path, query, body)
        except ApiStatusError as e:
            self._send(e.code, e.status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _route(self, method: str, path: str, query: dict[str, str], body: Obj) -> None:
        parts = [p for p in path.split("/") if p]
        if path == "/version":
            self._send(
                200,
                {
                    "major": "1",
                    "minor": "34",
                    "gitVersion": "v1.34.0-fake",
                    "platform": "linux/amd64",
                },
            )
            return
        if parts == ["api"]:
            addr = {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.api.port}"}
            self._send(
                200,
                {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [addr]},
            )
            return
        if parts == ["apis"]:
            self._send(200, _groups())
            return
        if parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis"):
            group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
            found = _discovery(group, version)
            if not found["resources"]:
                raise ApiStatusError(404, "the server could not find the requested resource")
            self._send(200, found)
            return
        if len(parts) < 3 or parts[0] not in ("api", "apis"):
            raise ApiStatusError(404, "the server could not find the requested resource")
        res, ns, name, sub = _resolve(parts)
        resource = f"{res.plural}{'/' + sub if sub else ''}"
        self.api.store.stats.requests[f"{method} {resource}"] += 1
        agent = self.headers.get("User-Agent", "")
        verb = rbac_verb(method, name, query)
        self.api.store.stats.calls[(agent, verb, res.group, resource, name)] += 1
        store = self.api.store
        if method == "GET" and not name:
            if query.get("watch") in ("true", "1"):
                self._watch(res, ns, query)
            else:
                self._list(res, ns, query)
        elif method == "GET":
            obj = store.get(res, ns, name)
            self._send(
                200,
                _table(res, [obj], obj["metadata"]["resourceVersion"])
                if "as=Table" in self.headers.get("Accept", "")
                else obj,
            )
        elif method == "POST" and sub == "binding":
            agent = self.headers.get("User-Agent", "")
            store.bind(ns, name, body, agent, time.monotonic())
            self._send(201, status_object(201))
        elif method == "POST" and not name:
            self._send(201, store.create(res, ns, body))
        elif method == "PUT" and name:
            self._send(200, store.update(res, ns, name, body, status_only=sub == "status"))
        elif method == "PATCH" and name:
            ctype = self.headers.get("Content-Type", "")
            if "json-patch" in ctype:
                raise ApiStatusError(415, f"unsupported patch type {ctype}", "UnsupportedMediaType")
            self._send(200, store.patch(res, ns, name, body, "strategic" in ctype, sub == "status"))
        elif method == "DELETE" and name:
            self._send(200, store.delete(res, ns, name))
        else:
            raise ApiStatusError(405, f"{method} is not supported", "MethodNotAllowed")

    # ------------------------------------------------------------------ list and watch
    def _list(self, res: Resource, ns: str, query: dict[str, str]) -> None:
        start = 0
        if query.get("continue"):
            start = int(base64.b64decode(query["continue"]).decode())
        limit = int(query.get("limit") or 0)
        if query.get("resourceVersion") == "0" and self.api.watch_cache:
            limit = 0
        labels, fields = query.get("labelSelector", ""), query.get("fieldSelector", "")
        # list items carry no kind/apiVersion, as from kube-apiserver
        data, rv, total = self.api.store.page_json(res, ns, labels, fields, start, limit)
        if "as=Table" in self.headers.get("Accept", ""):
            self._send(200, _table(res, json.loads(data), str(rv)))
            return
        meta: Obj = {"resourceVersion": str(rv)}
        if limit and start + limit < total:
            meta["continue"] = base64.b64encode(str(start + limit).encode()).decode()
            meta["remainingItemCount"] = total - start - limit
        head = {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta}
        self._send_bytes(200, json.dumps(head)[:-1].encode() + b', "items": ' + data + b"}")

    def _chunk(self, event: Obj) -> None:
        data = json.dumps(event).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, res: Resource, ns: str, query: dict[str, str]) -> None:
        store = self.api.store
        labels, fields = query.get("labelSelector", ""), query.get("fieldSelector", "")
        timeout = min(float(query.get("timeoutSeconds") or MAX_WATCH_SECONDS), MAX_WATCH_SECONDS)
        deadline = time.monotonic() + timeout
        rv = int(query.get("resourceVersion") or 0)
        with store.cond:
            drops = store.drops
            if rv == 0:
                items, pos = store.list(res, ns, labels, fields)
                pending: list[tuple[int, str, Obj]] = [(pos, "ADDED", o) for o in items]
            else:
                pos, pending = rv, []
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while True:
            for erv, kind, obj in pending:
                pos = max(pos, erv)
                meta = obj.get("metadata") or {}
                if (not ns or meta.get("namespace") == ns) and matches(obj, labels, fields):
                    obj = {**obj, "kind": res.kind, "apiVersion": res.api_version}
                    self._chunk({"type": kind, "object": obj})
            with store.cond:
                try:
                    pending = store.events_since(res, pos)
                except ApiStatusError as e:
                    self._chunk({"type": "ERROR", "object": e.status()})
                    break
                if not pending:
                    left = deadline - time.monotonic()
                    if store.stopped or left <= 0:
                        break
                    if store.drops != drops:
                        self._abort()
                        return
                    store.cond.wait(timeout=min(left, 0.5))
                    if store.drops != drops or store.stopped:
                        self._abort()
                        return
                    continue
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _abort(self) -> None:
        """Cut the connection without the terminating chunk (a dropped watch)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
