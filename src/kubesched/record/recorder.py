"""``kubesched record``: watch a real cluster, read-only, and write a recording to disk.

The watching is live mode's (:class:`kubesched.live.informer.Informer`, one per kind of
:data:`kubesched.live.informer.SCHEDULER_KINDS`, the storage objects included): a list, then
a watch from its resourceVersion with bookmarks, resumed from the last resourceVersion after
a dropped connection, a relist after 410 Gone, backoff on errors.  Every delta goes to one
bounded queue; this module's loop takes them in order and turns them into events
(:mod:`kubesched.record.format`), written to ``events.jsonl`` as they come and flushed every
second: memory holds the informers' stores (the cluster's current objects, as live mode's)
and a small state per object, never the history.

Time 0 is when every informer has listed once: the stores are then written as
``snapshot.json`` and what they hold is the starting state.  A delta the snapshot already
reflects (the same resourceVersion) is not written again.  After a relist (a 410 Gone, or a
watch that could not resume) the informer hands on the difference between the old store and
the new list; its changes are written then, at the relist's time, followed by a
``Relisted`` event naming the kind, since they happened somewhere in the gap.

The recorder makes GET requests only: ``/version``, and list and watch of each kind
(``deploy/record-rbac.yaml`` grants exactly that).  Before the informers start, each kind is
listed once with ``limit=1``: a refusal (401, 403) ends the recording at once with a
message naming the kind and the RBAC file; an optional custom resource that is not served
(404) is left out.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kubesched import __version__
from kubesched.api.errors import InputError
from kubesched.live.client import ApiError, KubeClient
from kubesched.live.informer import (
    DELETED,
    SCHEDULER_KINDS,
    Delta,
    Informer,
    Kind,
    Timing,
    object_key,
)
from kubesched.record import format as fmt

log = logging.getLogger(__name__)

Obj = dict[str, Any]

FLUSH_SECONDS = 1.0
QUEUE_SIZE = 10_000
"""Deltas waiting to be written at most; the informers wait beyond (backpressure)."""
FINISHED = ("Succeeded", "Failed")


class RecordError(Exception):
    """The cluster cannot be recorded (credentials refused, nothing listable)."""


@dataclass(slots=True)
class _Pod:
    uid: str
    rv: str
    node: str
    phase: str
    scheduler: str
    created: float | None
    """``t`` of the Pod's creation (negative: before time 0; None: unknown)."""
    unschedulable: tuple[str, str] = ("", "")
    shape: str = ""
    """Labels and scheduling gates of a Pending Pod (a change is a ``PodUpdated``)."""


@dataclass(slots=True)
class Progress:
    """Where a recording is: ``elapsed`` seconds since time 0 (None while listing),
    ``events`` written, ``counts`` by type, Pods and Nodes known now, relists so far."""

    elapsed: float | None
    events: int
    counts: dict[str, int]
    pods: int
    nodes: int
    relists: int


@dataclass
class Summary:
    """What a finished recording holds (the header's closing fields)."""

    directory: str
    events: int
    duration: float
    counts: dict[str, int] = field(default_factory=dict)
    stop_reason: str = ""


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))


def _digest(obj: Obj) -> str:
    return hashlib.blake2b(fmt.fingerprint(obj).encode(), digest_size=16).hexdigest()


def _rfc3339(ts: float) -> str:
    return (
        dt.datetime.fromtimestamp(ts, dt.UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp, None if it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _scheduled_false(obj: Obj) -> tuple[str, str] | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("reason", "")), str(c.get("message", ""))
    return None


def _shape(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    part = {"labels": meta.get("labels"), "gates": spec.get("schedulingGates")}
    return json.dumps(part, sort_keys=True)


def prepare_directory(out: str) -> Path:
    """``out`` as a directory to record into: created if absent; an existing one must be
    empty (a recording is never overwritten).  :class:`InputError` otherwise."""
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise InputError([("--out", f"{out} exists and is not a directory")])
        if any(path.iterdir()):
            raise InputError([("--out", f"{out} is not empty (a recording is never overwritten)")])
    else:
        try:
            path.mkdir(parents=True)
        except OSError as e:
            raise InputError([("--out", f"cannot create {out}: {e.strerror}")]) from None
    return path


class Recorder:
    """Records the cluster behind ``client`` into ``out`` (see the module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        out: Path,
        *,
        timing: Timing | None = None,
        kinds: tuple[Kind, ...] = SCHEDULER_KINDS,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.out = out
        self.timing = timing or Timing()
        self.kinds = kinds
        self.clock = clock
        self.wall = wall
        self.stop_event = threading.Event()
        self._stop_reason = ""
        self._queue: queue.Queue[Delta] = queue.Queue(QUEUE_SIZE)
        self._informers: list[Informer] = []
        self._threads: list[threading.Thread] = []
        self._pods: dict[str, _Pod] = {}
        self._objects: dict[tuple[str, str], tuple[str, str]] = {}
        """(kind, key) -> (resourceVersion, digest) of every Node and other object."""
        self._lists: dict[str, int] = {}
        self._t0 = 0.0
        self._started = False
        self._seq = 0
        self._counts: Counter[str] = Counter()
        self._events: IO[str] | None = None
        self._header: Obj = {}

    # ------------------------------------------------------------------ control
    def stop(self, reason: str = "interrupted") -> None:
        """Stop soon (a signal handler may call this)."""
        if not self._stop_reason:
            self._stop_reason = reason
        self.stop_event.set()

    def run(
        self,
        duration: float | None = None,
        progress: Callable[[Progress], None] | None = None,
        progress_every: float = 1.0,
    ) -> Summary:
        """Record until :meth:`stop` or ``duration`` seconds after time 0; the summary.
        :class:`RecordError` when the cluster cannot be read at all."""
        self._preflight()
        self._write_header(complete=False)
        self._start_informers()
        last_flush = last_progress = self.clock()
        try:
            while not self.stop_event.is_set():
                try:
                    delta = self._queue.get(timeout=0.1)
                except queue.Empty:
                    delta = None
                now = self.clock()
                if not self._started:
                    if all(i.synced.is_set() for i in self._informers):
                        self._snapshot()
                elif delta is not None:
                    self._handle(delta)
                if self._started:
                    self._note_relists()
                    if duration is not None and now - self._t0 >= duration:
                        self.stop("duration")
                if now - last_flush >= FLUSH_SECONDS and self._events is not None:
                    self._events.flush()
                    last_flush = now
                if progress is not None and now - last_progress >= progress_every:
                    progress(self.progress())
                    last_progress = now
        finally:
            self._finish()
        if progress is not None:
            progress(self.progress())
        return Summary(
            str(self.out),
            self._seq,
            self._header.get("durationSeconds") or 0.0,
            dict(self._counts),
            self._stop_reason,
        )

    def progress(self) -> Progress:
        """The recording's state now."""
        elapsed = self.clock() - self._t0 if self._started else None
        nodes = sum(1 for kind, _ in self._objects if kind == "Node")
        relists = sum(max(0, n - 1) for n in self._lists.values())
        return Progress(elapsed, self._seq, dict(self._counts), len(self._pods), nodes, relists)

    # ------------------------------------------------------------------ start
    def _preflight(self) -> None:
        """``/version``, then one small list of each kind: refusals end here."""
        try:
            version = self.client.request("GET", "/version")
        except ApiError as e:
            if e.code in (401, 403):
                raise RecordError(f"the API server refused /version: {e}") from None
            log.warning("cannot read the API server's version: %s", e)
            version = {}
        kept = []
        for kind in self.kinds:
            try:
                self.client.request("GET", kind.path, query={"limit": 1})
            except ApiError as e:
                if e.code == 404 and kind.optional:
                    log.info("%s is not served by this API server; not recorded", kind.kind)
                    continue
                hint = " (deploy/record-rbac.yaml grants what it needs)" if e.code == 403 else ""
                raise RecordError(f"cannot list {kind.path}: {e}{hint}") from None
            kept.append(kind)
        self.kinds = tuple(kept)
        self._header = {
            "apiVersion": fmt.API_VERSION,
            "kind": fmt.KIND,
            "formatVersion": fmt.FORMAT_VERSION,
            "recorder": f"kubesched {__version__}",
            "server": self.client.host,
            "kubernetesVersion": str(version.get("gitVersion", "")),
            "kinds": [k.kind for k in self.kinds],
            "startedAt": None,
            "endedAt": None,
            "durationSeconds": None,
            "complete": False,
            "events": 0,
            "counts": {},
            "stopReason": "",
        }

    def _start_informers(self) -> None:
        for kind in self.kinds:
            inf = Informer(
                self.client, kind, self._queue.put, self.stop_event, self.timing, batch_lists=True
            )
            t = threading.Thread(target=inf.run, name=f"record-{kind.kind}", daemon=True)
            self._informers.append(inf)
            self._threads.append(t)
            self._lists[kind.kind] = 0
            t.start()

    def _snapshot(self) -> None:
        """Time 0: write every store as ``snapshot.json`` and open ``events.jsonl``."""
        self._t0 = self.clock()
        start_wall = self.wall()
        self._header["startedAt"] = _rfc3339(start_wall)
        # What the stores hold now; deltas queued before are part of it (or dropped below).
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        tmp = self.out / (fmt.SNAPSHOT + ".part")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write('{"apiVersion":"v1","kind":"List","metadata":{},"items":[')
            first = True
            for inf in self._informers:
                self._lists[inf.kind.kind] = inf.lists
                for obj in inf.snapshot():
                    clean = fmt.sanitize(obj)
                    if clean is None:
                        continue
                    self._remember(obj, clean, start_wall)
                    fh.write(("\n" if first else ",\n") + fmt.encode(clean))
                    first = False
            fh.write("\n]}\n")
        os.replace(tmp, self.out / fmt.SNAPSHOT)
        self._events = open(self.out / fmt.EVENTS, "w", encoding="utf-8")  # noqa: SIM115
        self._started = True
        self._write_header(complete=False)
        log.info("recording: snapshot written, time 0 is %s", self._header["startedAt"])

    def _remember(self, obj: Obj, clean: Obj, start_wall: float) -> None:
        kind = str(obj.get("kind"))
        key = object_key(obj)
        if kind == "Pod":
            created = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
            self._pods[key] = self._pod_state(
                obj, None if created is None else created - start_wall
            )
        else:
            self._objects[(kind, key)] = (_rv(obj), _digest(clean))

    @staticmethod
    def _pod_state(obj: Obj, created: float | None) -> _Pod:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        return _Pod(
            uid=str(meta.get("uid", "")),
            rv=_rv(obj),
            node=str(spec.get("nodeName") or ""),
            phase=str((obj.get("status") or {}).get("phase", "")),
            scheduler=str(spec.get("schedulerName") or "default-scheduler"),
            created=created,
            unschedulable=_scheduled_false(obj) or ("", ""),
            shape=_shape(obj),
        )

    # ------------------------------------------------------------------ events
    def _emit(self, etype: str, **fields: Any) -> None:
        assert self._events is not None
        self._seq += 1
        self._counts[etype] += 1
        t = round(max(0.0, self.clock() - self._t0), 6)
        line = fmt.encode({"seq": self._seq, "t": t, "type": etype, **fields})
        self._events.write(line + "\n")

    def _now(self) -> float:
        return self.clock() - self._t0

    def _handle(self, delta: Delta) -> None:
        for d in delta.split():
            if d.kind == "Pod":
                self._pod(d)
            else:
                self._other(d)

    def _pod(self, d: Delta) -> None:
        obj = d.new
        key = object_key(obj)
        st = self._pods.get(key)
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        if d.type == DELETED:
            if st is not None and (not uid or st.uid == uid):
                del self._pods[key]
                self._emit(fmt.POD_DELETED, pod=key, uid=st.uid)
            return
        if st is not None and st.uid != uid:  # deleted and recreated while not watching
            del self._pods[key]
            self._emit(fmt.POD_DELETED, pod=key, uid=st.uid)
            st = None
        if st is None:
            clean = fmt.sanitize(obj)
            assert clean is not None
            st = self._pod_state(obj, self._now())
            self._pods[key] = st
            self._emit(fmt.POD_CREATED, object=clean)
            if st.phase in FINISHED:
                self._emit(fmt.POD_FINISHED, pod=key, uid=uid, phase=st.phase)
            return
        rv = _rv(obj)
        if rv == st.rv:
            return  # the snapshot holds this version already
        st.rv = rv
        spec = obj.get("spec") or {}
        node = str(spec.get("nodeName") or "")
        if node and not st.node:
            st.node = node
            wait = None if st.created is None else round(self._now() - st.created, 6)
            self._emit(
                fmt.POD_BOUND, pod=key, uid=uid, node=node, scheduler=st.scheduler, bindSeconds=wait
            )
        elif not node:
            failed = _scheduled_false(obj)
            if failed is not None and failed != st.unschedulable:
                st.unschedulable = failed
                self._emit(
                    fmt.POD_UNSCHEDULABLE,
                    pod=key,
                    uid=uid,
                    scheduler=st.scheduler,
                    reason=failed[0],
                    message=failed[1],
                )
            shape = _shape(obj)
            if shape != st.shape:
                st.shape = shape
                clean = fmt.sanitize(obj)
                assert clean is not None
                self._emit(fmt.POD_UPDATED, object=clean)
        phase = str((obj.get("status") or {}).get("phase", ""))
        if phase in FINISHED and st.phase not in FINISHED:
            self._emit(fmt.POD_FINISHED, pod=key, uid=uid, phase=phase)
        st.phase = phase

    def _other(self, d: Delta) -> None:
        obj = d.new
        kind = d.kind
        key = object_key(obj)
        known = self._objects.get((kind, key))
        if d.type == DELETED:
            if known is None:
                return
            del self._objects[(kind, key)]
            if kind == "Node":
                self._emit(fmt.NODE_DELETED, node=key)
            else:
                meta = obj.get("metadata") or {}
                self._emit(
                    fmt.OBJECT_DELETED,
                    kind=kind,
                    namespace=str(meta.get("namespace") or ""),
                    name=str(meta.get("name", "")),
                )
            return
        rv = _rv(obj)
        if known is not None and known[0] == rv:
            return
        clean = fmt.sanitize(obj)
        if clean is None:
            return
        digest = _digest(clean)
        self._objects[(kind, key)] = (rv, digest)
        if known is not None and known[1] == digest:
            return  # a heartbeat, a status the format does not keep
        if kind == "Node":
            self._emit(fmt.NODE_ADDED if known is None else fmt.NODE_UPDATED, object=clean)
        else:
            self._emit(fmt.OBJECT_APPLIED, object=clean)

    def _note_relists(self) -> None:
        for inf in self._informers:
            kind = inf.kind.kind
            if inf.lists > self._lists[kind]:
                self._lists[kind] = inf.lists
                # its deltas are queued before the count moved; write them first
                self._drain()
                self._emit(fmt.RELISTED, kind=kind)

    def _drain(self) -> None:
        while True:
            try:
                delta = self._queue.get_nowait()
            except queue.Empty:
                return
            self._handle(delta)

    # ------------------------------------------------------------------ end
    def _finish(self) -> None:
        self.stop_event.set()
        self.client.stop_watches()
        for t in self._threads:
            t.join(timeout=10)
        if self._started:
            self._drain()
        if self._events is not None:
            self._events.flush()
            os.fsync(self._events.fileno())
            self._events.close()
        if self._started:
            duration = round(self._now(), 3)
            self._header.update(
                endedAt=_rfc3339(self.wall()),
                durationSeconds=duration,
                complete=True,
                events=self._seq,
                counts=dict(sorted(self._counts.items())),
                stopReason=self._stop_reason or "stopped",
            )
        else:
            self._header.update(stopReason=self._stop_reason or "stopped before time 0")
        self._write_header(complete=self._started)

    def _write_header(self, *, complete: bool) -> None:
        self._header["complete"] = complete
        tmp = self.out / (fmt.HEADER + ".part")
        tmp.write_text(json.dumps(self._header, indent=2) + "\n")
        os.replace(tmp, self.out / fmt.HEADER)
