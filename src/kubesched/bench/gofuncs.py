"""The values and functions of scheduler_perf's Go templates, as Go computes them.

Upstream renders its templates with ``text/template``; the data is what
``sigs.k8s.io/yaml`` decodes (every number a ``float64``; :func:`go_data` makes the same of a
PyYAML value) plus the ints ``Index`` and ``Count``.  This module is what a template computes
with: Go's truth (:func:`go_true`), ``fmt``'s ``%v`` (:func:`go_format`), the builtins
``and``, ``or``, ``not``, ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge`` (``funcs.go``) and the
function map of ``operations.go`` (``AddInt``, ..., ``Int``, ``JSON``) plus ``div`` and
``mod`` that ``create.go`` adds.  :class:`Missing` is Go's invalid ``reflect.Value``: what a
missing map key or a ``nil`` evaluates to.  The parse tree and the walk are in
:mod:`kubesched.bench.gotemplate`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


class TemplateError(Exception):
    """A template that cannot be parsed or rendered (the message names the action)."""


@dataclass(frozen=True)
class Missing:
    """Go's invalid value: a map's missing key (``what`` names it and the keys there are),
    or ``nil``.  False, ``null`` in JSON, ``nil`` to a function taking ``any``; printing it
    is refused (Go prints ``<no value>``)."""

    what: str = "no value"


NO_VALUE = Missing()
"""``nil``, and a ``nil`` interface read from the data."""


def go_data(value: Any) -> Any:
    """``value`` as ``sigs.k8s.io/yaml`` decodes it into ``any``: every number a float64
    (so ``{{.n}}`` of a million prints ``1e+06`` and ``eq .n 1`` is an error, as upstream)."""
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): go_data(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [go_data(v) for v in value]
    return value


def go_type(value: Any) -> str:
    """The Go type of a template value (for error messages)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    return "<nil>"


def go_true(value: Any) -> bool:
    """Go's ``isTrue``: false, 0, "", an empty list or map, nil and a missing key are false."""
    if value is None or isinstance(value, Missing):
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str | list | dict):
        return len(value) > 0
    return True


def go_format(value: Any) -> str:
    """``fmt.Sprint(value)``: maps as ``map[k:v ...]`` with sorted keys, lists as
    ``[a b]``, floats as ``%v`` (``1e+06``), nil as ``<nil>``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if value is None:
        return "<nil>"
    if isinstance(value, Missing):
        return "<no value>"
    if isinstance(value, Mapping):
        items = " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value))
        return f"map[{items}]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    return str(value)


def _shortest(f: float) -> tuple[str, int]:
    """The shortest digits that round-trip ``abs(f)`` (f not 0) and the decimal exponent of
    the first digit."""
    _, digit_tuple, exponent = Decimal(repr(abs(f))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    return digits, len(digits) + int(exponent) - 1


def _fixed(digits: str, exp: int) -> str:
    if exp < 0:
        return f"0.{'0' * (-exp - 1)}{digits}"
    if len(digits) <= exp + 1:
        return digits + "0" * (exp + 1 - len(digits))
    return f"{digits[: exp + 1]}.{digits[exp + 1 :]}"


def _go_float(f: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)`` (what ``%v`` prints): the shortest digits that
    round-trip, in ``%e`` form when the decimal exponent is below -4 or at least 6."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, f) < 0 else ""
    if f == 0:
        return sign + "0"
    digits, exp = _shortest(f)
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + _fixed(digits, exp)


# ------------------------------------------------------------------ JSON (encoding/json)
_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
                 "\f": "\\f", "\u2028": "\\u2028", "\u2029": "\\u2029"}  # fmt: skip
_JSON_SPECIAL = re.compile('["\\\\\x00-\x1f\u2028\u2029]')


def _json_float(f: float) -> str:
    """encoding/json's float64: ``'f'`` form, ``'e'`` below 1e-6 or from 1e21 (``1e-7``)."""
    if math.isnan(f) or math.isinf(f):
        raise TemplateError(f"cannot JSON-encode {_go_float(f)}: unsupported value")
    sign = "-" if math.copysign(1.0, f) < 0 else ""
    if f == 0:
        return sign + "0"
    digits, exp = _shortest(f)
    if abs(f) < 1e-6 or abs(f) >= 1e21:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}".replace("e-0", "e-")
    return sign + _fixed(digits, exp)


def go_json(value: Any) -> str:
    """Upstream's ``JSON``: ``json.Encoder`` without HTML escaping, keys sorted, no spaces."""
    if value is None or isinstance(value, Missing):
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, str):
        body = _JSON_SPECIAL.sub(
            lambda m: _JSON_ESCAPES.get(m.group(0), f"\\u{ord(m.group(0)):04x}"), value
        )
        return f'"{body}"'
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{go_json(str(k))}:{go_json(value[k])}" for k in sorted(value)) + "}"
    return "[" + ",".join(go_json(v) for v in value) + "]"


# ------------------------------------------------------------------ functions (operations.go)
def _present(value: Any) -> Any:
    """A function taking ``any`` gets ``nil`` for an invalid value (``validateType``)."""
    return None if isinstance(value, Missing) else value


def to_float(value: Any) -> float:
    """Upstream ``toFloat64``: numbers and numeric strings; anything else is an error."""
    value = _present(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise TemplateError(f"cannot cast {go_format(value)} to float64")


def to_int(value: Any) -> int:
    """Upstream ``toInt``: a float truncated, an int, a string as ``strconv.Atoi``."""
    value = _present(value)
    if isinstance(value, float):
        return go_int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value):
        return int(value)
    raise TemplateError(f"cannot cast {go_format(value)} to int")


def go_int(value: float) -> int:
    """Go's ``int(f)``: truncation toward zero."""
    if math.isnan(value) or math.isinf(value):
        raise TemplateError(f"cannot convert {go_format(value)} to int")
    return int(value)


def _divide(a: Any, b: Any) -> float:
    den = to_float(b)
    if den == 0:
        raise TemplateError("division by zero")
    return to_float(a) / den


def _mod(a: Any, b: Any) -> int:
    x, y = go_int(to_float(a)), go_int(to_float(b))
    if y == 0:
        raise TemplateError("integer divide by zero")
    r = abs(x) % abs(y)  # Go's % truncates: the remainder has the dividend's sign
    return -r if x < 0 else r


def _div(a: Any, b: Any) -> int:
    x, y = go_int(to_float(a)), go_int(to_float(b))
    if y == 0:
        raise TemplateError("integer divide by zero")
    q = abs(x) // abs(y)  # Go's / truncates toward zero
    return -q if (x < 0) != (y < 0) else q


def _add(*xs: Any) -> float:
    return math.fsum(to_float(x) for x in xs) if xs else 0.0


def _mul(*xs: Any) -> float:
    out = 1.0
    for x in xs:
        out *= to_float(x)
    return out


# ------------------------------------------------------------------ builtins (funcs.go)
def _basic_kind(value: Any) -> str:
    """Go's ``basicKind`` (the comparison classes); a missing key is refused with its name
    (Go: ``invalid type for comparison``)."""
    if isinstance(value, Missing):
        if value is NO_VALUE:
            raise TemplateError("invalid type for comparison")
        raise TemplateError(value.what)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if value is None:
        raise TemplateError("invalid type for comparison")
    raise TemplateError("non-comparable type")


def _incompatible(a: Any, b: Any) -> TemplateError:
    return TemplateError(f"incompatible types for comparison: {go_type(a)} and {go_type(b)}")


def _eq(*xs: Any) -> bool:
    """``eq arg1 arg2...``: ``arg1`` equals any later argument (same kind)."""
    if len(xs) < 2:
        raise TemplateError("missing argument for comparison")
    kind = _basic_kind(xs[0])
    for other in xs[1:]:
        if _basic_kind(other) != kind:
            raise _incompatible(xs[0], other)
        if other == xs[0]:
            return True
    return False


def _lt(a: Any, b: Any) -> bool:
    """``lt``: ints, floats or strings of one kind; bools are not ordered."""
    ka, kb = _basic_kind(a), _basic_kind(b)
    if ka != kb:
        raise _incompatible(a, b)
    if ka == "bool":
        raise TemplateError("invalid type for comparison")
    return bool(a < b)


def _le(a: Any, b: Any) -> bool:
    return _lt(a, b) or _eq(a, b)


BUILTIN_FUNCS: dict[str, tuple[int | None, Callable[..., Any]]] = {
    "eq": (None, _eq),
    "ne": (2, lambda a, b: not _eq(a, b)),
    "lt": (2, _lt),
    "le": (2, _le),
    "gt": (2, lambda a, b: not _le(a, b)),
    "ge": (2, lambda a, b: not _lt(a, b)),
    "not": (1, lambda a: not go_true(a)),
}
"""Go's builtins taking ``reflect.Value`` (they see a missing key as such); ``and`` and
``or`` short-circuit and are the walk's (:mod:`kubesched.bench.gotemplate`)."""

FUNCS: dict[str, tuple[int | None, Callable[..., Any]]] = {
    "AddFloat": (None, _add),
    "AddInt": (None, lambda *xs: go_int(_add(*xs))),
    "DivideFloat": (2, _divide),
    "DivideInt": (2, lambda a, b: go_int(_divide(a, b))),
    "Int": (1, to_int),
    "JSON": (1, go_json),
    "Mod": (2, _mod),
    "MultiplyFloat": (None, _mul),
    "MultiplyInt": (None, lambda *xs: go_int(_mul(*xs))),
    "SubtractFloat": (2, lambda a, b: to_float(a) - to_float(b)),
    "SubtractInt": (2, lambda a, b: go_int(to_float(a) - to_float(b))),
    "div": (2, _div),
    "mod": (2, _mod),
    **BUILTIN_FUNCS,
}
"""Function name to (number of arguments or None for variadic, implementation)."""

SHORT_CIRCUIT = frozenset(("and", "or"))
"""The builtins that evaluate their arguments one by one and return one of them."""
