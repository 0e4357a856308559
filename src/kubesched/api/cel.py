"""CEL device selectors of DRA (``resource.k8s.io/v1``), as Kubernetes evaluates them.

The only module that imports the CEL library (``cel-python``, ``celpy``; an import-linter
contract keeps it so).  Why that library: Kubernetes' DRA environment needs opaque values with
methods -- ``device.capacity[domain].memory`` is a ``Quantity`` (``compareTo``,
``isGreaterThan``, ...), a version attribute is a ``Semver`` -- and celpy carries any Python
value through evaluation and calls ``x.f(y)`` as ``f(x, y)``; the Rust bindings
(``common-expression-language``) can only pass plain JSON-like values.  Expressions run on
celpy's ``CompiledRunner`` (transpiled to Python once, ~10x the interpreter's speed).

The environment follows ``k8s.io/dynamic-resource-allocation/cel`` (v1.34):

- ``device.driver`` (string), ``device.attributes[domain][id]`` (int, bool, string, or
  ``semver``), ``device.capacity[domain][id]`` (``quantity``); an unqualified attribute or
  capacity name lives in the driver's domain; a domain the device lacks is an empty map
  (upstream's ``mapper`` default), so ``device.attributes["x"].y`` is a runtime error
  ``no such key`` -- absorbed by ``&&``/``||`` as CEL's commutative logic says;
- ``quantity(s)``, ``isQuantity(s)``, and on quantities ``compareTo``, ``isGreaterThan``,
  ``isLessThan``, ``add``, ``sub``, ``isInteger``, ``asInteger``, ``asApproximateFloat``,
  ``sign``; ``==`` compares values (``quantity("1") == quantity("1000m")``);
- ``semver(s)``, ``isSemver(s)``, and on versions ``major``, ``minor``, ``patch``,
  ``compareTo``, ``isGreaterThan``, ``isLessThan``.

Deviation: upstream type-checks at compile time (``device.driver == 1`` is a compile error);
celpy has no checker, so such an expression fails when first evaluated (a runtime error,
which aborts the scheduling attempt as upstream's runtime errors do).  Parse errors are
found at load time, with the selector's field path.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import total_ordering
from typing import Any

import celpy
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from kubesched.api.errors import CelRuntimeError, InputError
from kubesched.api.quantity import QuantityError, parse_quantity

__all__ = ["CelRuntimeError", "DeviceInput", "Quantity", "Selector", "Semver", "compile_selector"]

logging.getLogger("celpy").setLevel(logging.CRITICAL)  # it logs every runtime error

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


@total_ordering
class Quantity:
    """A Kubernetes ``resource.Quantity`` inside CEL (exact value)."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Fraction) -> None:
        self.text = text
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


@total_ordering
class Semver:
    """A semantic version (``blang/semver`` as Kubernetes' CEL library uses it)."""

    __slots__ = ("build", "major", "minor", "patch", "pre", "text")

    def __init__(self, text: str) -> None:
        m = _SEMVER.match(text)
        if m is None:
            raise ValueError(f"invalid semver {text!r}")
        self.text = text
        self.major, self.minor, self.patch = int(m[1]), int(m[2]), int(m[3])
        self.pre = tuple(m[4].split(".")) if m[4] else ()
        self.build = m[5] or ""

    def _key(self) -> tuple[Any, ...]:
        # A version with a pre-release sorts before the same version without one; numeric
        # identifiers sort below alphanumeric ones (semver 2.0.0, section 11).
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, not self.pre, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self._key() == other._key()

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


def _quantity(text: Any) -> Quantity:
    try:
        return Quantity(str(text), parse_quantity(str(text)))
    except QuantityError as e:
        raise ValueError(f"invalid quantity {text!r}: {e}") from None


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        parse_quantity(str(text))
    except QuantityError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _is_semver(text: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_SEMVER.match(str(text)) is not None)


def _compare(a: Any, b: Any) -> celtypes.IntType:
    if type(a) is not type(b) or not isinstance(a, Quantity | Semver):
        raise TypeError(f"no such overload: compareTo({type(a).__name__}, {type(b).__name__})")
    return celtypes.IntType(0 if a == b else (-1 if a < b else 1))


def _arith(a: Any, b: Any, sign: int) -> Quantity:
    other = b.value if isinstance(b, Quantity) else Fraction(int(b))
    value = a.value + sign * other
    return Quantity(str(value), value)


def _greater(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_compare(a, b) > 0)


def _less(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_compare(a, b) < 0)


def _add(a: Any, b: Any) -> Quantity:
    return _arith(a, b, 1)


def _sub(a: Any, b: Any) -> Quantity:
    return _arith(a, b, -1)


def _semver(text: Any) -> Semver:
    return Semver(str(text))


def _is_integer(q: Quantity) -> celtypes.BoolType:
    return celtypes.BoolType(q.value.denominator == 1)


def _as_integer(q: Quantity) -> celtypes.IntType:
    return celtypes.IntType(int(q.value))


def _as_float(q: Quantity) -> celtypes.DoubleType:
    return celtypes.DoubleType(float(q.value))


def _sign(q: Quantity) -> celtypes.IntType:
    return celtypes.IntType((q.value > 0) - (q.value < 0))


def _major(v: Semver) -> celtypes.IntType:
    return celtypes.IntType(v.major)


def _minor(v: Semver) -> celtypes.IntType:
    return celtypes.IntType(v.minor)


def _patch(v: Semver) -> celtypes.IntType:
    return celtypes.IntType(v.patch)


_FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": _compare,
    "isGreaterThan": _greater,
    "isLessThan": _less,
    "add": _add,
    "sub": _sub,
    "isInteger": _is_integer,
    "asInteger": _as_integer,
    "asApproximateFloat": _as_float,
    "sign": _sign,
    "major": _major,
    "minor": _minor,
    "patch": _patch,
}
"""Kubernetes' quantity and semver libraries.  Module-level named functions, because
celpy's transpiler calls a function by ``module.qualname`` from its own module's globals
(hence the ``kubesched`` name made visible there below)."""

celpy.evaluation.__dict__.setdefault("kubesched", sys.modules[__name__.split(".")[0]])
_ENV: list[Any] = []
"""The CEL environment, built on first compile (its parser takes most of a second)."""


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """What a selector sees of one device: ``attributes`` and ``capacity`` keyed by
    qualified name as the ResourceSlice spells them (values: int, bool, str or
    :class:`Semver`; capacities :class:`Quantity`)."""

    driver: str
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Quantity]


class _DefaultMap(celtypes.MapType):
    """A map whose missing keys are an empty map (upstream's ``mapper``)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType({})


def _value(v: Any) -> Any:
    if isinstance(v, bool):
        return celtypes.BoolType(v)
    if isinstance(v, int):
        return celtypes.IntType(v)
    if isinstance(v, str):
        return celtypes.StringType(v)
    return v


def _domains(values: Mapping[str, Any], driver: str) -> _DefaultMap:
    out: dict[str, dict[Any, Any]] = {}
    for name, v in values.items():
        domain, _, ident = name.rpartition("/")
        out.setdefault(domain or driver, {})[celtypes.StringType(ident)] = _value(v)
    return _DefaultMap(
        {celtypes.StringType(d): celtypes.MapType(inner) for d, inner in out.items()}
    )


def activation(device: DeviceInput) -> dict[str, Any]:
    """The ``device`` variable for ``device`` (build once per device, reuse per selector)."""
    return {
        "device": celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(device.driver),
                celtypes.StringType("attributes"): _domains(device.attributes, device.driver),
                celtypes.StringType("capacity"): _domains(device.capacity, device.driver),
            }
        )
    }


class Selector:
    """One compiled ``selectors[].cel.expression``."""

    __slots__ = ("_program", "expression")

    def __init__(self, expression: str, program: Any) -> None:
        self.expression = expression
        self._program = program

    def matches(self, device_activation: dict[str, Any]) -> bool:
        """Evaluate on a device (:func:`activation`); :class:`CelRuntimeError` when the
        expression fails or does not yield a bool."""
        try:
            result = self._program.evaluate(device_activation)
        except CELEvalError as e:
            raise CelRuntimeError(_eval_message(e)) from None
        except (TypeError, ValueError, KeyError, ZeroDivisionError) as e:
            raise CelRuntimeError(str(e)) from None
        if isinstance(result, CELEvalError):
            raise CelRuntimeError(_eval_message(result))
        if not isinstance(result, bool | celtypes.BoolType):
            raise CelRuntimeError(
                f"CEL result of type {_cel_type(result)} could not be converted to bool"
            )
        return bool(result)


def _cel_type(value: Any) -> str:
    name = type(value).__name__
    return name[:-4].lower() if name.endswith("Type") else name


def _eval_message(err: Any) -> str:
    """Upstream's wording where celpy's differs (``no such key: model``)."""
    args = tuple(getattr(err, "args", ()))
    if len(args) == 3 and args[0] == "evaluation error" and args[2]:
        args = tuple(args[2])  # the transpiled program wraps the CELEvalError it raised
    if not args or not isinstance(args[0], str):
        return str(err)
    message: str = args[0]
    detail = args[2] if len(args) > 2 and isinstance(args[2], tuple) else ()
    if message.startswith(("no such member", "no such key")) and detail:
        return f"no such key: {detail[0]}"
    return message


_COMPILED: dict[str, Selector] = {}
_INTERPRETER: list[Any] = []


def _interpreter() -> Any:
    """celpy's tree-walking runner, for the expressions its transpiler cannot take."""
    if not _INTERPRETER:
        _INTERPRETER.append(celpy.Environment(runner_class=celpy.InterpretedRunner))
    return _INTERPRETER[0]


def compile_selector(expression: str, path: str) -> Selector:
    """Compile ``expression`` once (cached by text); a syntax error is an
    :class:`InputError` at ``path`` with upstream's ``compilation failed:`` prefix."""
    hit = _COMPILED.get(expression)
    if hit is not None:
        return hit
    if not expression.strip():
        raise InputError([(path, "compilation failed: empty expression")])
    if not _ENV:
        _ENV.append(celpy.Environment(runner_class=celpy.CompiledRunner))
    env = _ENV[0]
    try:
        ast = env.compile(expression)
        try:
            program = env.program(ast, functions=_FUNCTIONS)
        except SyntaxError:  # a CEL name that is a Python keyword (`lambda`) cannot be
            # transpiled to Python: the same AST, walked by celpy's interpreter instead
            program = _interpreter().program(ast, functions=_FUNCTIONS)
    except CELParseError as e:
        where = " ".join(line.strip() for line in str(e).splitlines()[1:] if line.strip())
        detail = f"syntax error at {where}" if where else "syntax error"
        raise InputError([(path, f"compilation failed: {detail} in {expression!r}")]) from None
    except Exception as e:  # celpy's transpiler raises plain errors for odd input
        raise InputError([(path, f"compilation failed: {e}")]) from None
    sel = Selector(expression, program)
    _COMPILED[expression] = sel
    return sel
