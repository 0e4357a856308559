"""A recording read back (:mod:`kubesched.record.format`) and checked on the way in.

Every problem is an :class:`~kubesched.api.errors.InputError` naming the file and the field
(the header), the item path (the snapshot, read as any snapshot is:
:func:`kubesched.api.parse.load_cluster`) or the line and field (the events): a recording of
another format version, a missing file, a truncated events file, an event out of order or of
an unknown type, an object that does not parse.  Each Pod and Node of the events is parsed
as the snapshot's are, so a replay never starts on a recording it cannot finish.

``events.jsonl`` is read line by line (it may be larger than the input-file limit of the
other readers); a line may not exceed :data:`MAX_LINE_BYTES`.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.api import objects as api
from kubesched.api.errors import InputError, excerpt
from kubesched.api.parse import ParsedObjects, load_cluster, parse_node, parse_objects
from kubesched.api.source import check_file, load_text, read_text
from kubesched.record import format as fmt

log = logging.getLogger(__name__)

Obj = dict[str, Any]

MAX_LINE_BYTES = 16 * 2**20
"""Longest line of ``events.jsonl`` (one Pod or Node, stripped)."""
MAX_EVENTS = 50_000_000


@dataclass(slots=True)
class Event:
    """One line of ``events.jsonl``: ``fields`` are the line's own (``object`` and names);
    ``pod`` / ``node`` the parsed object of a Pod or Node event."""

    seq: int
    t: float
    type: str
    fields: Obj
    line: int
    pod: api.Pod | None = None
    node: api.Node | None = None


@dataclass(slots=True)
class Recording:
    """A recording: the header, the snapshot parsed, and the events in order."""

    directory: Path
    header: Obj
    snapshot: ParsedObjects
    events: list[Event] = field(default_factory=list)

    @property
    def duration(self) -> float:
        """Seconds recorded: the header's, else the last event's time."""
        d = self.header.get("durationSeconds")
        last = self.events[-1].t if self.events else 0.0
        return max(float(d), last) if isinstance(d, int | float) else last


def load_recording(directory: str) -> Recording:
    """Read and check the recording in ``directory`` (see the module docstring)."""
    path = Path(directory)
    if not path.exists():
        raise InputError("no such recording directory", file=directory)
    if not path.is_dir():
        raise InputError(
            "not a recording directory (a recording is the directory `kubesched record "
            "--out DIR` wrote)",
            file=directory,
        )
    header = read_header(path / fmt.HEADER)
    snap = path / fmt.SNAPSHOT
    if not snap.exists():
        raise InputError(
            "no such file: a recording has a snapshot (did the recorder stop before every "
            "kind was listed?)",
            file=str(snap),
        )
    snapshot = load_cluster(str(snap))
    rec = Recording(path, header, snapshot)
    rec.events = list(read_events(path / fmt.EVENTS, header))
    return rec


def read_header(path: Path) -> Obj:
    """``recording.json``, checked: kind, apiVersion, a format version this reader knows."""
    file = str(path)
    if not path.exists():
        raise InputError("no such file: not a recording (no header)", file=file)
    docs = load_text(read_text(file), file)
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError("not a recording header (one JSON object)", file=file)
    h: Obj = docs[0]
    problems: list[tuple[str, str]] = []
    if h.get("kind") != fmt.KIND:
        problems.append(("kind", f"want {fmt.KIND}, got {excerpt(h.get('kind'))}"))
    if h.get("apiVersion") != fmt.API_VERSION:
        problems.append(
            ("apiVersion", f"want {fmt.API_VERSION}, got {excerpt(h.get('apiVersion'))}")
        )
    version = h.get("formatVersion")
    if version not in fmt.SUPPORTED_FORMATS or isinstance(version, bool):
        known = ", ".join(map(str, fmt.SUPPORTED_FORMATS))
        problems.append(
            (
                "formatVersion",
                f"{excerpt(version)} is not a format this kubesched reads (it reads {known}); "
                "record again with this version, or replay with the kubesched that recorded it",
            )
        )
    for key, kind in (("startedAt", str), ("complete", bool)):
        if not isinstance(h.get(key), kind):
            problems.append((key, f"required: a {kind.__name__}, got {excerpt(h.get(key))}"))
    events = h.get("events")
    if not isinstance(events, int) or isinstance(events, bool) or events < 0:
        problems.append(("events", f"required: an integer >= 0, got {excerpt(events)}"))
    if problems:
        raise InputError(problems, file=file)
    if not h["complete"]:
        log.warning(
            "%s: the recorder did not stop cleanly (complete: false); replaying what was written",
            file,
        )
    return h


def read_events(path: Path, header: Obj) -> Iterator[Event]:
    """The events of ``events.jsonl`` in order, each checked (see the module docstring)."""
    file = str(path)
    if not path.exists():
        raise InputError("no such file: a recording has an events file", file=file)
    check_regular(file)
    last_t = 0.0
    n = 0
    with open(file, "rb") as fh:
        for n, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if n > MAX_EVENTS:
                raise InputError([(f"line {n}", f"more than {MAX_EVENTS} events")], file=file)
            ended = raw.endswith(b"\n")
            if len(raw) > MAX_LINE_BYTES and not ended:
                raise InputError([(f"line {n}", f"longer than {MAX_LINE_BYTES} bytes")], file=file)
            try:
                doc = json.loads(raw, parse_constant=_no_constant)
            except ValueError as e:
                if not ended:
                    raise InputError(
                        [
                            (
                                f"line {n}",
                                "truncated: the file ends inside an event (the recorder was "
                                "killed while writing?); remove this last line to replay the "
                                "events before it",
                            )
                        ],
                        file=file,
                    ) from None
                raise InputError([(f"line {n}", f"not JSON: {e}")], file=file) from None
            try:
                event = check_event(doc, n, last_t)
            except InputError as e:
                raise e.with_file(file) from None
            last_t = event.t
            yield event
    if header.get("complete") and n != header.get("events"):
        raise InputError(
            [
                (
                    "",
                    f"recording.json says {header.get('events')} events were written, the "
                    f"file has {n} lines: it was truncated or appended to",
                )
            ],
            file=file,
        )


def check_regular(file: str) -> None:
    """``file`` is a regular file (any size: events are read line by line)."""
    try:
        check_file(file)
    except InputError as e:
        if "limit" not in str(e):
            raise
    if not os.path.isfile(file):
        raise InputError("not a regular file", file=file)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_event(doc: Any, n: int, last_t: float) -> Event:
    """One decoded line as an :class:`Event`; :class:`InputError` naming line ``n``."""
    at = f"line {n}"
    if not isinstance(doc, dict):
        raise InputError([(at, "an event is a JSON object")])
    seq, t, etype = doc.get("seq"), doc.get("t"), doc.get("type")
    if seq != n or isinstance(seq, bool):
        raise InputError(
            [(f"{at}: seq", f"want {n} (events are numbered 1, 2, ...), got {excerpt(seq)}")]
        )
    if not isinstance(t, int | float) or isinstance(t, bool) or not math.isfinite(t) or t < 0:
        raise InputError([(f"{at}: t", f"want seconds >= 0, got {excerpt(t)}")])
    if t < last_t:
        raise InputError([(f"{at}: t", f"{t} is before the previous event's {last_t}")])
    if etype not in fmt.EVENT_FIELDS:
        known = ", ".join(fmt.EVENT_FIELDS)
        raise InputError(
            [(f"{at}: type", f"unknown event type {excerpt(etype)}; want one of {known}")]
        )
    want = fmt.EVENT_FIELDS[etype]
    fields = {k: v for k, v in doc.items() if k not in ("seq", "t", "type")}
    problems = []
    for name in fields:
        if name not in want:
            problems.append((f"{at}: {name}", f"unknown field of a {etype} event"))
    for name, kind in want.items():
        value = fields.get(name)
        if name not in fields:
            problems.append((f"{at}: {name}", f"required field of a {etype} event is missing"))
        elif not _is(value, kind):
            problems.append((f"{at}: {name}", f"want a {kind}, got {excerpt(value)}"))
    if problems:
        raise InputError(problems)
    event = Event(n, float(t), etype, fields, n)
    if "object" in want:
        _parse_object(event, at)
    return event


def _is(value: Any, kind: str) -> bool:
    if kind == fmt.STR:
        return isinstance(value, str)
    if kind == fmt.OBJ:
        return isinstance(value, dict)
    if value is None:
        return kind == fmt.OPT_NUM
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _parse_object(event: Event, at: str) -> None:
    obj = event.fields["object"]
    want = fmt.OBJECT_KINDS.get(event.type)
    kind = obj.get("kind")
    where = f"{at}: object"
    if want is not None and kind != want:
        raise InputError(
            [(f"{where}.kind", f"a {event.type} event holds a {want}, got {excerpt(kind)}")]
        )
    if want is None and kind in ("Pod", "Node"):
        raise InputError([(f"{where}.kind", f"a {kind} is recorded by Pod and Node events")])
    if kind == "Pod":
        try:
            parsed = parse_objects([obj])
        except InputError as e:
            raise _prefix(e, where) from None
        event.pod = parsed.pods[0] if parsed.pods else None
        if event.pod is None:
            raise InputError([(where, "not a Pod")])
    elif kind == "Node":
        try:
            event.node = parse_node(obj, where)
        except InputError as e:
            raise InputError(e.problems) from None
    elif not isinstance(kind, str) or not kind:
        raise InputError([(f"{where}.kind", "required: the object's kind")])


def _prefix(e: InputError, where: str) -> InputError:
    return InputError([(f"{where}.{p}" if p else where, m) for p, m in e.problems])
