"""The one reader of input files: every command reads its manifests, scenarios, sweeps,
configurations, benchmark configs, saved results and CSV traces through this module, so
every file gets the same checks and the same strictness.

Limits (documented in ``docs/input-limits.md``), each refused with exit code 2 before
anything large is allocated:

- only regular files are read: a directory, a FIFO, a socket or a device (``/dev/zero``)
  is refused without opening it, so nothing blocks or reads forever;
- at most :data:`MAX_FILE_BYTES` per file;
- the text must be UTF-8;
- YAML and JSON are decoded strictly, as upstream's strict decoder does: a key repeated in
  one mapping is an error (in every file, so ``schedule --config`` judges a configuration
  exactly as ``run --config`` does), JSON's non-standard ``NaN``/``Infinity`` are refused,
  and nesting deeper than :data:`MAX_DEPTH` levels is refused (no ``RecursionError``);
- YAML is read the way ``kubectl`` reads it: ``safe`` only, the C parser when PyYAML has it,
  and unquoted timestamps stay strings (``sigs.k8s.io/yaml`` does not turn them into dates).

JSON is decoded by msgspec's C decoder (three times as fast as the standard library's with
a hook for repeated keys), its result checked against the text (:mod:`kubesched.api.jsonscan`
counts the keys written, and the nesting depth): whatever the fast decoder takes otherwise
than the exact one would (a repeated key, ``NaN``, a number beyond a float's range, an
unpaired surrogate) or refuses goes to the standard library's decoder, which names the
problem; there an unpaired surrogate reads as U+FFFD, as Go's decoder (the API server's)
reads it, and an integer of more than :data:`MAX_DIGITS` digits is refused (in YAML too).
The values are the same either way (a property test decodes both).  A large file's text is
scanned by a forked child on the other core while the decoder runs.

Decoding, and the steps that turn a large snapshot into objects and columns, run inside
:func:`bulk_allocation`: Python's cyclic garbage collector is paused while millions of
acyclic containers are created (it would otherwise walk every one of them again and again:
decoding a 100 MB ``kubectl`` List took 4x as long with it running).
"""

from __future__ import annotations

import gc
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import compress
from typing import Any

import msgspec
import yaml

from kubesched.api import beside, jsonscan
from kubesched.api.errors import InputError, excerpt

__all__ = [
    "FREEZE_ANSWER_AFTER",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "bulk_allocation",
    "check_file",
    "load_file",
    "load_text",
    "max_file_bytes",
    "read_bytes",
    "read_text",
    "resume_collector",
    "set_max_file_bytes",
]

MAX_FILE_BYTES = 256 * 2**20
"""Largest input file read by default (256 MiB): a 5,000-node ``kubectl get nodes,pods -A -o
json`` with 150,000 Pods is well under that; ``--max-input-size`` raises it
(:func:`set_max_file_bytes`)."""

_limit = [MAX_FILE_BYTES]


def set_max_file_bytes(limit: int) -> None:
    """Read input files of up to ``limit`` bytes from now on (the CLI's ``--max-input-size``)."""
    _limit[0] = limit


def max_file_bytes() -> int:
    """The largest input file read now."""
    return _limit[0]


MAX_DEPTH = 100
"""Deepest nesting of mappings and lists accepted (Kubernetes objects nest about 15 deep)."""

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that leaves timestamps as strings and refuses a repeated key."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # ``<<: *base`` then an override is not a repeat
        key = loader.construct_object(key_node, deep=True)
        try:
            repeated = key in seen
        except TypeError:  # an unhashable key; construct_mapping reports it
            break
        if repeated:
            line = key_node.start_mark.line + 1
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"key {_quoted(key)} already set in map (line {line})",
                key_node.start_mark,
            )
        seen.add(key)
    return dict(loader.construct_mapping(node, deep=True))


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _quoted(key: object) -> str:
    """A repeated key as upstream's decoder names it: ``"name"``, shortened."""
    text = json.dumps(key) if isinstance(key, str) else excerpt(key)
    return text if len(text) <= 60 else text[:60] + '..."'


FREEZE_AFTER = 1_000_000
"""A bulk block that leaves more new objects than this freezes them (``gc.freeze``)."""

FREEZE_ANSWER_AFTER = 100_000
"""The same for a one-shot answer's block (``explain``): its objects live until the
answer is given, so fewer are enough (a 10,000-node snapshot's cache and indexes leave
about 600,000, which the next collections would walk twice, 0.4 s)."""


@contextmanager
def bulk_allocation(freeze_after: int = FREEZE_AFTER) -> Iterator[None]:
    """Pause the cyclic garbage collector while the block builds many objects (re-entrant:
    only the outermost block enables it again, and only if it was enabled).  Reference
    counting still frees everything that is dropped; only cycles wait until the end.

    When the block leaves more than ``freeze_after`` new objects (a snapshot of a large
    cluster, an initial LIST; a one-shot answer such as ``explain``'s, whose objects live
    until it is given, passes fewer), they are moved to the collector's permanent
    generation, so that later collections do not walk them again (each full walk of a
    10,000-node, 200,000-Pod snapshot's objects costs seconds).  The price: a reference
    cycle among them that becomes garbage is never collected (acyclic objects are freed as
    usual)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            resume_collector(freeze_after)


def resume_collector(freeze_after: int = FREEZE_AFTER) -> None:
    """End a pause of the cyclic garbage collector (:func:`bulk_allocation`'s, or one that
    spans more than a block, as live mode's first lists do): what was built meanwhile is
    frozen if it is more than ``freeze_after`` objects, and the collector enabled."""
    if gc.get_count()[0] > freeze_after:
        gc.freeze()
    gc.enable()


def check_file(path: str) -> int:
    """The size of ``path``, which must be a regular file of at most :data:`MAX_FILE_BYTES`;
    :class:`InputError` naming ``path`` otherwise (nothing is opened)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", file=path) from None
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO, socket or device"
        raise InputError(f"not a regular file ({what})", file=path)
    if st.st_size > _limit[0]:
        raise InputError(
            f"file is {st.st_size} bytes; the limit is {_limit[0]} bytes "
            "(raise it with --max-input-size)",
            file=path,
        )
    return st.st_size


def read_bytes(path: str) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`check_file`)."""
    check_file(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(_limit[0] + 1)
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", file=path) from None
    if len(data) > _limit[0]:  # it grew since the stat
        raise InputError(f"file is over the limit of {_limit[0]} bytes", file=path)
    return data


def read_text(path: str) -> str:
    """The UTF-8 text of the regular file ``path`` (see :func:`check_file`)."""
    return _utf8(read_bytes(path), path)


def _utf8(data: bytes, file: str | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(
            [(f"line {line}", f"not UTF-8 text (byte 0x{data[err.start]:02x})")], file=file
        ) from None


def load_file(path: str) -> list[Any]:
    """:func:`load_text` of the file at ``path`` (read by :func:`read_bytes`); a JSON file's
    bytes go to the decoder as they are (no text is made of them unless it refuses them)."""
    return _load(None, read_bytes(path), path)


def load_text(text: str, file: str | None = None) -> list[Any]:
    """The documents of a YAML or JSON stream, decoded strictly (see the module docstring);
    empty YAML documents are dropped and a JSON array is one document."""
    return _load(text, None, file)


def _load(text: str | None, data: bytes | None, file: str | None) -> list[Any]:
    try:
        with bulk_allocation():
            docs, shared, depth = _decode(text, data, file)
    except RecursionError:
        docs, shared, depth = None, False, None
    if depth is not None:
        deep = depth > MAX_DEPTH
    else:
        deep = docs is None or not all(_depth_ok(d, shared) for d in docs)
    if deep:
        raise InputError(f"nested deeper than {MAX_DEPTH} levels", file=file)
    return docs  # type: ignore[return-value]


_SPACE = re.compile(rb"[ \t\r\n]*")
_SPACE_TEXT = re.compile(r"[ \t\r\n]*")
_REFUSED: Any = object()


def _first_char(text: str | None, data: bytes | None) -> str:
    """The first character after JSON's whitespace ("" for none; "\\x80" for a byte that
    does not begin an ASCII character)."""
    if data is not None:
        at = _SPACE.match(data).end()  # type: ignore[union-attr]
        return chr(min(data[at], 0x80)) if at < len(data) else ""
    assert text is not None
    at = _SPACE_TEXT.match(text).end()  # type: ignore[union-attr]
    return text[at : at + 1]


def _fast_json(data: bytes) -> tuple[Any, int]:
    """The value of the JSON ``data`` decoded by msgspec's C decoder, and its depth
    (:func:`jsonscan.text_shape`, worked out meanwhile: :func:`_shape_beside`).  The value
    is :data:`_REFUSED` for anything the C decoder decodes otherwise than the exact decoder
    would, or not at all: a repeated key (it keeps the last: the decoded keys fall short of
    the keys written), ``NaN``, a number beyond a float's range, an unpaired surrogate
    escape, invalid UTF-8 or JSON (the exact decoder then names it)."""
    shape = _shape_beside(data)
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError:
        doc = _REFUSED
    finally:
        depth, keys = shape()  # waited for whatever happens: no child is left behind
    if doc is not _REFUSED and jsonscan.decoded_keys(doc, msgspec.json.encode) != keys:
        doc = _REFUSED
    return doc, depth


def _shape_beside(data: bytes) -> Callable[[], tuple[int, int]]:
    """A function giving :func:`jsonscan.text_shape` of ``data``; for :data:`beside.SIDE_BYTES`
    or more, worked out meanwhile by a forked child on another core (:mod:`beside`: the C
    decoder holds the interpreter's lock, so a thread could not run beside it)."""
    answer = beside.run(lambda: b"%d %d" % jsonscan.text_shape(data), len(data))
    if answer is None:
        shape = jsonscan.text_shape(data)
        return lambda: shape

    def wait() -> tuple[int, int]:
        words = answer().split()
        if len(words) != 2:  # the child gave no answer: the scan runs here
            return jsonscan.text_shape(data)
        return int(words[0]), int(words[1])

    return wait


def _decode(
    text: str | None, data: bytes | None, file: str | None
) -> tuple[list[Any], bool, int | None]:
    """The documents of ``text`` or ``data`` (one is given), whether containers may be shared
    (YAML aliases), and for JSON the nesting depth (None for YAML: the caller walks the
    documents)."""
    head = _first_char(text, data)
    if head in ("{", "["):
        if data is None:  # a lone surrogate stays (as invalid UTF-8) for the exact decoder
            data = text.encode("utf-8", "surrogatepass")  # type: ignore[union-attr]
        doc, depth = _fast_json(data)
        if doc is not _REFUSED:
            return [doc], False, depth
        if text is None:
            text = _utf8(data, file)
        try:
            doc = json.loads(
                text,
                object_pairs_hook=_json_object,
                parse_constant=_no_constant,
                parse_int=_json_int,
            )
            if _SURROGATE_TEXT.search(text):
                doc = _without_surrogates(doc)
            return [doc], False, depth
        except _JsonDigits as err:
            raise InputError([(f"line {_long_number_line(text)}", str(err))], file=file) from None
        except _JsonStrict as err:
            raise InputError([("", str(err))], file=file) from None
        except ValueError:
            pass  # maybe YAML flow style; let YAML report the error
    if text is None:
        text = _utf8(data, file)  # type: ignore[arg-type]
    try:
        return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None], True, None
    except yaml.YAMLError as err:
        raise InputError([_yaml_problem(err)], file=file) from None


class _JsonStrict(ValueError):
    """JSON that upstream's strict decoder refuses."""


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _JsonStrict(f"key {_quoted(key)} already set in map")
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise _JsonStrict(f"{name} is not a JSON number")


MAX_DIGITS = sys.get_int_max_str_digits() or 4300
"""Most digits of an integer read (Python's limit for turning text into an integer, which
guards against its quadratic cost; no Kubernetes field holds a number a hundredth as long)."""


def _too_long(digits: int) -> str:
    return f"a number of {digits} digits: at most {MAX_DIGITS} are read"


class _JsonDigits(_JsonStrict):
    """A JSON integer longer than :data:`MAX_DIGITS` digits."""


def _json_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise _JsonDigits(_too_long(digits))
    return int(text)


def _long_number_line(text: str) -> int:
    """The line of the first run of more than :data:`MAX_DIGITS` digits in ``text``."""
    found = re.search(f"[0-9]{{{MAX_DIGITS + 1}}}", text)
    return text.count("\n", 0, found.start()) + 1 if found else 1


_SURROGATE_TEXT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
"""JSON text that may decode to a string with an unpaired surrogate."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    """``value`` with each unpaired surrogate in its strings (keys too) replaced by U+FFFD,
    as the API server's JSON decoder (Go's) reads it: such a string cannot be encoded as
    UTF-8, so it would break whatever writes or hashes it later."""
    if type(value) is str:
        return _SURROGATE.sub("\ufffd", value)
    if type(value) is list:
        return [_without_surrogates(v) for v in value]
    if type(value) is dict:
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def _construct_int(loader: Any, node: yaml.ScalarNode) -> Any:
    """YAML's integer, refused (with its place) beyond :data:`MAX_DIGITS` digits."""
    digits = sum(c.isdigit() for c in node.value)
    if digits > MAX_DIGITS:
        raise yaml.constructor.ConstructorError(None, None, _too_long(digits), node.start_mark)
    return loader.construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _yaml_problem(err: yaml.YAMLError) -> tuple[str, str]:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    if mark is None:
        return ("", f"invalid YAML: {problem}")
    return (f"line {mark.line + 1}, column {mark.column + 1}", f"invalid YAML: {problem}")


_CONTAINER = frozenset((dict, list)).__contains__


def _depth_ok(doc: Any, shared: bool) -> bool:
    """Whether ``doc`` nests at most :data:`MAX_DEPTH` levels, walked level by level (no
    recursion).  YAML aliases make ``shared`` containers: each is walked once per level it
    appears at, so an alias bomb costs no more than its distinct containers.  Decoded data
    holds only ``dict`` and ``list`` containers (the loaders construct no subclasses), picked
    out of each level by C-level iteration (a 100 MB List has millions of values)."""
    level = [doc] if isinstance(doc, dict | list) else []
    for _ in range(MAX_DEPTH):
        if not level:
            return True
        below: list[Any] = []
        for value in level:
            if type(value) is dict:
                values = value.values()
                below.extend(compress(values, map(_CONTAINER, map(type, values))))
            else:
                below.extend(compress(value, map(_CONTAINER, map(type, value))))
        if shared:
            below = list({id(c): c for c in below}.values())
        level = below
    return not level
