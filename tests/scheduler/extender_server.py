"""A real HTTP scheduler extender on loopback for tests (``http.server`` on a thread).

Each verb's behaviour is a function of the decoded JSON request returning the JSON answer;
``delay[verb]`` seconds are slept first and ``status[verb]`` is the HTTP status sent.  Every
request is recorded (verb, body) and every new TCP connection counted, so tests can assert
"one call per cycle" and "connections are reused".

Hostile answers: ``trickle[verb] = (seconds, headers)`` writes the answer one byte every
``seconds`` (the body only, or the status line and headers too); ``padding[verb] = n`` adds
``n`` bytes of whitespace to the JSON; ``unannounced`` sends no ``Content-Length`` and
closes the connection after the body, so its size is known only once read; ``chunked``
sends the body in 1 KiB chunks (``Transfer-Encoding: chunked``, as Go's ``net/http`` does
for larger answers).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Behaviour = Callable[[dict[str, Any]], Any]


def sent_names(args: dict[str, Any]) -> list[str]:
    """Node names an ``ExtenderArgs`` carries (NodeNames or Nodes.items)."""
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in args["Nodes"]["items"]]


def keep_only(*allowed: str, reason: str = "not allowed by extender") -> Behaviour:
    """A filter passing only ``allowed`` nodes (answering as the request was asked)."""

    def answer(args: dict[str, Any]) -> dict[str, Any]:
        names = sent_names(args)
        ok = [n for n in names if n in allowed]
        failed = {n: reason for n in names if n not in allowed}
        out: dict[str, Any] = {"FailedNodes": failed, "Error": ""}
        if args.get("NodeNames") is not None:
            out["NodeNames"] = ok
        else:
            items = [n for n in args["Nodes"]["items"] if n["metadata"]["name"] in ok]
            out["Nodes"] = {"items": items}
        return out

    return answer


def prefer(scores: dict[str, int]) -> Behaviour:
    """A prioritize answering ``scores`` (0 for nodes not listed)."""

    def answer(args: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"Host": n, "Score": scores.get(n, 0)} for n in sent_names(args)]

    return answer


def sent_victims(args: dict[str, Any]) -> dict[str, list[str]]:
    """Victim UIDs per node of an ``ExtenderPreemptionArgs`` (full Pods or MetaVictims)."""
    if args.get("NodeNameToMetaVictims") is not None:
        meta = args["NodeNameToMetaVictims"]
        return {n: [p["UID"] for p in v["Pods"]] for n, v in meta.items()}
    full = args["NodeNameToVictims"]
    return {n: [p["metadata"]["uid"] for p in v["Pods"]] for n, v in full.items()}


def preempt_only(
    *allowed: str, victims: dict[str, list[str]] | None = None, pdb: int = 0
) -> Behaviour:
    """A preempt keeping only the ``allowed`` candidate nodes (all when none are named), with
    the victims it was sent unless ``victims`` names UIDs for a node; ``NumPDBViolations``
    ``pdb``."""

    def answer(args: dict[str, Any]) -> dict[str, Any]:
        sent = sent_victims(args)
        chosen = {**sent, **(victims or {})}
        kept = [n for n in chosen if not allowed or n in allowed]
        meta = {n: {"Pods": [{"UID": u} for u in chosen[n]], "NumPDBViolations": pdb} for n in kept}
        return {"NodeNameToMetaVictims": meta}

    return answer


def _chunks(data: bytes, size: int = 1024) -> bytes:
    """``data`` in HTTP/1.1 chunked encoding."""
    parts = [data[i : i + size] for i in range(0, len(data), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


class _Trickle:
    """A writer sending one byte every ``every`` seconds (until the client hangs up)."""

    def __init__(self, out: Any, every: float) -> None:
        self.out = out
        self.every = every

    def write(self, data: bytes) -> int:
        for i in range(len(data)):
            self.out.write(data[i : i + 1])
            self.out.flush()
            time.sleep(self.every)
        return len(data)

    def flush(self) -> None:
        self.out.flush()


class ExtenderServer:
    """Start with ``with ExtenderServer(filter=..., prioritize=..., bind=...) as srv``; pass
    ``tls`` (a server-side SSL context) to serve HTTPS."""

    def __init__(self, tls: ssl.SSLContext | None = None, **verbs: Behaviour) -> None:
        self.verbs = dict(verbs)
        self.delay: dict[str, float] = {}
        self.status: dict[str, int] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.connections = 0
        self.drop_connections = False
        """Close each connection after one answer, without telling the client (stale
        keep-alive connections)."""
        self.trickle: dict[str, tuple[float, bool]] = {}
        self.padding: dict[str, int] = {}
        self.unannounced = False
        self.chunked = False
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def setup(self) -> None:
                super().setup()
                with outer._lock:
                    outer.connections += 1

            def do_POST(self) -> None:
                verb = self.path.rsplit("/", 1)[-1]
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer._lock:
                    outer.requests.append((verb, body))
                time.sleep(outer.delay.get(verb, 0.0))
                fn = outer.verbs.get(verb)
                code = outer.status.get(verb, 200 if fn else 404)
                data = json.dumps(fn(body) if fn and code == 200 else {}).encode()
                data += b" " * outer.padding.get(verb, 0)
                every, headers_too = outer.trickle.get(verb, (0.0, False))
                if headers_too:
                    self.wfile = _Trickle(self.wfile, every)
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                if outer.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    data = _chunks(data)
                elif outer.unannounced:
                    self.send_header("Connection", "close")
                else:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if every and not headers_too:
                    _Trickle(self.wfile, every).write(data)
                else:
                    self.wfile.write(data)
                self.close_connection = outer.drop_connections or outer.unannounced

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that timed out closed its end: not a test failure

        self._server = Server(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def calls(self, verb: str) -> list[dict[str, Any]]:
        """Bodies of the requests made to ``verb``."""
        with self._lock:
            return [b for v, b in self.requests if v == verb]

    def __enter__(self) -> ExtenderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
