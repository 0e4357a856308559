"""Typed readers for manifest fields, each failing with the field's full path.

Every reader takes the parent mapping, the key and the parent's path; the path string is
only built when something is wrong, so reading a valid manifest costs no string work.
A missing key or an explicit ``null`` reads as the default (as the API server treats
omitted and null fields alike).  Wrong types and invalid values raise
:class:`~kubesched.api.errors.InputError` with one ``(path, message)`` problem.

Validation follows the API server's messages where the scheduler depends on the value
(selector operators, taint effects, quantities); it is not a full API validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from kubesched.api import objects as api
from kubesched.api import quantity
from kubesched.api.errors import InputError, excerpt, shape

Obj = Mapping[str, Any]

NODE_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
TAINT_EFFECTS = (api.NO_SCHEDULE, api.PREFER_NO_SCHEDULE, api.NO_EXECUTE)
_EMPTY: dict[str, Any] = {}


def join(path: str, key: str | int) -> str:
    """``path.key`` (or ``path[key]`` for an index); no leading dot at the root."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def fail(path: str, message: str) -> NoReturn:
    """Raise an :class:`InputError` with one problem."""
    raise InputError([(path, message)])


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {excerpt(value)}"


def mapping(obj: Obj, key: str, path: str) -> Obj:
    """A nested mapping; ``{}`` when absent."""
    value = obj.get(key)
    if value is None:
        return _EMPTY
    if not isinstance(value, dict):
        fail(join(path, key), f"must be a mapping, got {_kind(value)}")
    return value


def as_mapping(value: object, path: str) -> Obj:
    """``value`` itself, which must be a mapping (list elements)."""
    if not isinstance(value, dict):
        fail(path, f"must be a mapping, got {_kind(value)}")
    return value


def document(value: object, path: str) -> Obj:
    """``value`` itself, which must be a mapping: a document of a stream, or an item of a
    List.  What else it is is named by its :func:`~kubesched.api.errors.shape` only: a file
    that is not a manifest (a ``KEY=SECRET`` file passed by mistake) is not printed back."""
    if not isinstance(value, dict):
        fail(path, f"must be a mapping (a Kubernetes object), got {shape(value)}")
    return value


def seq(obj: Obj, key: str, path: str) -> list[Any]:
    """A nested list; ``[]`` when absent."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        fail(join(path, key), f"must be a list, got {_kind(value)}")
    return value


def string(obj: Obj, key: str, path: str, default: str = "") -> str:
    """A string field."""
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        fail(join(path, key), f"must be a string, got {_kind(value)}")
    return value


def required_string(obj: Obj, key: str, path: str) -> str:
    """A string field that must be present and non-empty."""
    value = string(obj, key, path)
    if not value:
        fail(join(path, key), "Required value")
    return value


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def integer(obj: Obj, key: str, path: str) -> int | None:
    """An integer field, ``None`` when absent (booleans are not integers).  Every integer
    field of the API is an ``int32`` or an ``int64``: a number beyond int64 is refused as the
    API server's decoder refuses it (narrower fields check their own range)."""
    value = obj.get(key)
    if value is None:
        return None
    if type(value) is not int or not INT64_MIN <= value <= INT64_MAX:
        _not_in_range(value, join(path, key), 64)
    return value


def int32(obj: Obj, key: str, path: str) -> int | None:
    """An ``int32`` field (``spec.priority``, a PriorityClass ``value``), ``None`` when absent;
    a number beyond int32 is refused as the API server's decoder refuses it."""
    value = obj.get(key)
    if value is None:
        return None
    if type(value) is not int or not INT32_MIN <= value <= INT32_MAX:
        _not_in_range(value, join(path, key), 32)
    return value


def _not_in_range(value: object, path: str, bits: int) -> NoReturn:
    if type(value) is not int:
        fail(path, f"must be an integer, got {_kind(value)}")
    low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
    shown = value if abs(value) < 10**30 else f"a number of {len(str(abs(value)))} digits"
    fail(path, f"must be a {bits}-bit integer ({low}..{high}), got {shown}")


def boolean(obj: Obj, key: str, path: str, default: bool = False) -> bool:
    """A boolean field."""
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        fail(join(path, key), f"must be a boolean, got {_kind(value)}")
    return value


def one_of(obj: Obj, key: str, path: str, allowed: tuple[str, ...], default: str) -> str:
    """A string field restricted to ``allowed`` (``default`` when absent or empty)."""
    value = string(obj, key, path) or default
    if value not in allowed:
        supported = ", ".join(f'"{a}"' for a in allowed)
        fail(join(path, key), f'Unsupported value: "{value}": supported values: {supported}')
    return value


def string_map(obj: Obj, key: str, path: str) -> dict[str, str]:
    """A ``map[string]string`` (labels, annotations, nodeSelector); a new dict."""
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        fail(join(path, key), f"must be a mapping, got {_kind(value)}")
    for k, v in value.items():
        if type(v) is not str or type(k) is not str:
            bad = k if type(k) is not str else v
            fail(join(join(path, key), str(k)), f"must be a string, got {_kind(bad)}")
    return dict(value)


def string_list(obj: Obj, key: str, path: str) -> tuple[str, ...]:
    """A ``[]string`` field."""
    values = seq(obj, key, path)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            fail(join(join(path, key), i), f"must be a string, got {_kind(v)}")
    return tuple(values)


def resource_list(obj: Obj, key: str, path: str) -> dict[str, int] | None:
    """A ``ResourceList`` in thousandths (see :func:`quantity.milli_value`); None when absent."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        fail(join(path, key), f"must be a mapping, got {_kind(value)}")
    out: dict[str, int] = {}
    for name, q in value.items():
        try:
            m = quantity.milli_value(q)
        except (quantity.QuantityError, TypeError) as err:
            fail(join(join(path, key), str(name)), _quantity_message(q, err))
        if m < 0:
            fail(join(join(path, key), str(name)), "must be greater than or equal to 0")
        big = quantity.too_large(str(name), quantity.units_from_milli(str(name), m), q)
        if big:
            fail(join(join(path, key), str(name)), big)
        out[str(name)] = m
    return out


def _quantity_message(q: object, err: Exception) -> str:
    if isinstance(err, quantity.QuantityError):
        return str(err)
    return f"quantities must be a string or a number, got {_kind(q)}"


def requirement(obj: Obj, path: str, operators: tuple[str, ...]) -> api.Requirement:
    """A selector requirement (``key``, ``operator``, ``values``) validated like the API server."""
    key = required_string(obj, "key", path)
    op = string(obj, "operator", path)
    if op not in operators:
        supported = ", ".join(f'"{o}"' for o in sorted(operators))
        fail(join(path, "operator"), f'Unsupported value: "{op}": supported values: {supported}')
    values = string_list(obj, "values", path)
    if op in ("In", "NotIn") and not values:
        fail(join(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
    if op in ("Exists", "DoesNotExist") and values:
        fail(
            join(path, "values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )
    if op in ("Gt", "Lt") and len(values) != 1:
        fail(join(path, "values"), "must be specified single value when `operator` is 'Lt' or 'Gt'")
    return api.Requirement(key, op, values)


def label_selector(obj: Obj, key: str, path: str) -> api.LabelSelector | None:
    """A ``metav1.LabelSelector``; None when absent (``{}`` is the match-everything selector)."""
    value = obj.get(key)
    if value is None:
        return None
    sel_path = join(path, key)
    sel = as_mapping(value, sel_path)
    labels = string_map(sel, "matchLabels", sel_path)
    exprs = tuple(
        requirement(
            as_mapping(e, join(join(sel_path, "matchExpressions"), i)),
            join(join(sel_path, "matchExpressions"), i),
            LABEL_SELECTOR_OPS,
        )
        for i, e in enumerate(seq(sel, "matchExpressions", sel_path))
    )
    return api.LabelSelector(tuple(labels.items()), exprs)


def node_selector_term(obj: Obj, path: str) -> api.NodeSelectorTerm:
    """One ``NodeSelectorTerm``; ``matchFields`` allows ``metadata.name``, In/NotIn, one value."""
    exprs = []
    for i, e in enumerate(seq(obj, "matchExpressions", path)):
        p = join(join(path, "matchExpressions"), i)
        exprs.append(requirement(as_mapping(e, p), p, NODE_SELECTOR_OPS))
    fields = []
    for i, e in enumerate(seq(obj, "matchFields", path)):
        p = join(join(path, "matchFields"), i)
        req = requirement(as_mapping(e, p), p, ("In", "NotIn"))
        if len(req.values) != 1:
            fail(
                join(p, "values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )
        if req.key != "metadata.name":
            fail(join(p, "key"), "not a valid field selector key")
        fields.append(req)
    return api.NodeSelectorTerm(tuple(exprs), tuple(fields))


def taint(obj: Obj, path: str) -> api.Taint:
    """A node taint: ``key`` and a valid ``effect`` are required."""
    key = required_string(obj, "key", path)
    effect = string(obj, "effect", path)
    if not effect:
        fail(join(path, "effect"), "Required value")
    one_of(obj, "effect", path, TAINT_EFFECTS, effect)
    return api.Taint(key, string(obj, "value", path), effect)
