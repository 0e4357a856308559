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
  ``semver``; under DRAListTypeAttributes, v1.36+, also a list of one of those),
  ``device.capacity[domain][id]`` (``quantity``); an unqualified attribute or
  capacity name lives in the driver's domain; a domain the device lacks is an empty map
  (upstream's ``mapper`` default), so ``device.attributes["x"].y`` is a runtime error
  ``no such key`` -- absorbed by ``&&``/``||`` as CEL's commutative logic says;
- ``quantity(s)``, ``isQuantity(s)``, and on quantities ``compareTo``, ``isGreaterThan``,
  ``isLessThan``, ``add``, ``sub``, ``isInteger``, ``asInteger``, ``asApproximateFloat``,
  ``sign``; ``==`` compares values (``quantity("1") == quantity("1000m")``);
- ``semver(s)``, ``isSemver(s)``, and on versions ``major``, ``minor``, ``patch``,
  ``compareTo``, ``isGreaterThan``, ``isLessThan``.

Limits, as the API server and kube-scheduler apply them (celpy has no cost support of its
own; :mod:`kubesched.api.celcost` is cel-go's estimator ported to celpy's parse tree):

- at load, a selector over 10 KiB (``may not be more than 10240 bytes``), one whose
  worst-case cost estimate is over 1,000,000 units (``too complex, exceeds cost limit``), a
  parse error or an undeclared identifier (``compilation failed: ...``) is an input error
  at the selector's field path, as the API server refuses such an object;
- at evaluation, what runs is counted (each comprehension iteration is charged what cel-go
  charges for it, the rest once, at its worst case) and the evaluation is cancelled past
  1,000,000 units with upstream's runtime error ``operation cancelled: actual cost limit
  exceeded`` (reachable only where a device is larger than the API allows: more than 32
  attributes, longer values).

Identifiers that are Python keywords or names of celpy's ``Activation`` (``lambda``,
``class``, ``get``, ...) are legal CEL; they are renamed before celpy transpiles the
expression to Python (which would otherwise refuse them, or read the ``Activation``'s own
attribute).  ``all``, ``exists``, ``exists_one``, ``map`` and ``filter`` run on this
module's own loops: they count the cost, and ``all`` / ``exists`` stop at the first
``false`` / ``true`` as cel-go's do (celpy's run every element).

Deviation: upstream type-checks at compile time (``device.driver == 1`` is a compile error);
celpy has no checker, so such an expression fails when first evaluated (a runtime error,
which aborts the scheduling attempt as upstream's runtime errors do) -- except ``==`` and
``!=`` between values of different types, which are false and true as cel-go's
heterogeneous equality evaluates them (what upstream does once attributes are dynamic,
under DRAListTypeAttributes: ``model == "h100"`` on a list).
"""

from __future__ import annotations

import keyword
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
from celpy.evaluation import Activation, CELEvalError, celbytes, celstr

from kubesched.api import celcost
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


def _equal(a: Any, b: Any) -> Any:
    """``==`` as cel-go evaluates it: values of two different kinds are not equal (its
    heterogeneous equality; celpy says ``no such overload``).  Reached when an attribute
    may be a list (DRAListTypeAttributes: ``model == "h100"`` on a ``strings`` attribute
    is false)."""
    if _different(a, b):
        return celtypes.BoolType(False)
    return celpy.evaluation.bool_eq(a, b)


def _not_equal(a: Any, b: Any) -> Any:
    """``!=``, the negation of :func:`_equal`."""
    if _different(a, b):
        return celtypes.BoolType(True)
    return celpy.evaluation.bool_ne(a, b)


_KINDS = (
    (celtypes.BoolType, "bool"),
    (celtypes.IntType | celtypes.UintType | celtypes.DoubleType, "number"),
    (celtypes.StringType, "string"),
    (celtypes.ListType, "list"),
    (celtypes.MapType, "map"),
)
"""The kinds cel-go's heterogeneous equality tells apart (numbers compare by value)."""


def _different(a: Any, b: Any) -> bool:
    """Both operands are plain CEL values of different kinds (errors, quantities and
    versions are left to celpy)."""
    ka = next((k for t, k in _KINDS if isinstance(a, t)), None)
    kb = next((k for t, k in _KINDS if isinstance(b, t)), None)
    return ka is not None and kb is not None and ka != kb


_FUNCTIONS: dict[str, Any] = {
    "_==_": _equal,
    "_!=_": _not_equal,
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
    :class:`Semver`, or a list of them; capacities :class:`Quantity`)."""

    driver: str
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Quantity]
    allow_multiple: bool = False
    """``allowMultipleAllocations`` (``device.allowMultipleAllocations``, false when unset)."""


class _DefaultMap(celtypes.MapType):
    """A map whose missing keys are an empty map (upstream's ``mapper``)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType({})


def _value(v: Any) -> Any:
    if isinstance(v, list):  # a list attribute (DRAListTypeAttributes)
        return celtypes.ListType([_value(x) for x in v])
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
                celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(
                    device.allow_multiple
                ),
                celtypes.StringType("attributes"): _domains(device.attributes, device.driver),
                celtypes.StringType("capacity"): _domains(device.capacity, device.driver),
            }
        )
    }


def without_multiple(device_activation: dict[str, Any]) -> dict[str, Any]:
    """``device_activation`` with ``device.allowMultipleAllocations`` false (upstream's
    allocators that leave it out of ``cel.Device``)."""
    device = dict(device_activation["device"])
    device[celtypes.StringType("allowMultipleAllocations")] = celtypes.BoolType(False)
    return {"device": celtypes.MapType(device)}


class _CostLimitExceeded(BaseException):
    """Raised through celpy's evaluation (which catches ``Exception``) when the budget is
    spent."""


_SPENT = [0]
"""The cost charged so far in the running evaluation (one evaluation at a time: celpy's
transpiled programs share its module's globals)."""

_COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"


def _charge(units: int) -> None:
    spent = _SPENT[0] + units
    _SPENT[0] = spent
    if spent > celcost.MAX_COST:
        raise _CostLimitExceeded


def _collection(activation: Any, rng: Any) -> Any:
    return celpy.evaluation.result(activation, rng)


def _iterate(activation: Any, var: str, body: Any, values: Any, charge: int) -> Any:
    """Each element's body result, charging ``charge`` per iteration."""
    for value in values:
        _charge(charge)
        yield celpy.evaluation.result(activation.nested_activation(vars={var: value}), body)


def _not_bool(r: Any) -> CELEvalError:
    return CELEvalError("no such overload", TypeError, (f"expected bool, got {_cel_type(r)}",))


def _quantifier(activation: Any, var: str, body: Any, rng: Any, charge: int, decisive: bool) -> Any:
    """cel-go's ``all`` (``decisive`` false) and ``exists`` (true): ``decisive`` at the first
    element whose body is ``decisive``; else the first error; else ``not decisive``."""
    values = _collection(activation, rng)
    if isinstance(values, CELEvalError):
        return values
    error = None
    for r in _iterate(activation, var, body, values, charge):
        if isinstance(r, CELEvalError):
            error = error or r
        elif not isinstance(r, bool | celtypes.BoolType):
            error = error or _not_bool(r)
        elif bool(r) is decisive:
            return celtypes.BoolType(decisive)
    return error if error is not None else celtypes.BoolType(not decisive)


def _macro_all(activation: Any, var: str, body: Any, rng: Any, charge: int) -> Any:
    """cel-go's ``all``: false at the first false; else the first error; else true."""
    return _quantifier(activation, var, body, rng, charge, decisive=False)


def _macro_exists(activation: Any, var: str, body: Any, rng: Any, charge: int) -> Any:
    """cel-go's ``exists``: true at the first true; else the first error; else false."""
    return _quantifier(activation, var, body, rng, charge, decisive=True)


def _macro_exists_one(activation: Any, var: str, body: Any, rng: Any, charge: int) -> Any:
    """cel-go's ``exists_one``: every element; any error is the result."""
    values = _collection(activation, rng)
    if isinstance(values, CELEvalError):
        return values
    count = 0
    for r in _iterate(activation, var, body, values, charge):
        if isinstance(r, CELEvalError):
            return r
        if not isinstance(r, bool | celtypes.BoolType):
            return _not_bool(r)
        count += bool(r)
    return celtypes.BoolType(count == 1)


def _macro_map(activation: Any, var: str, body: Any, rng: Any, charge: int) -> Any:
    values = _collection(activation, rng)
    if isinstance(values, CELEvalError):
        return values
    out = []
    for r in _iterate(activation, var, body, values, charge):
        if isinstance(r, CELEvalError):
            return r
        out.append(r)
    return celtypes.ListType(out)


def _macro_filter(activation: Any, var: str, body: Any, rng: Any, charge: int) -> Any:
    values = _collection(activation, rng)
    if isinstance(values, CELEvalError):
        return values
    out = []
    for value in values:
        _charge(charge)
        r = celpy.evaluation.result(activation.nested_activation(vars={var: value}), body)
        if isinstance(r, CELEvalError):
            return r
        if not isinstance(r, bool | celtypes.BoolType):
            return _not_bool(r)
        if r:
            out.append(value)
    return celtypes.ListType(out)


def _macro_map_filter(
    activation: Any, var: str, keep: Any, body: Any, rng: Any, charge: int
) -> Any:
    """``map(x, p, f)``: ``f`` of the elements for which ``p`` holds."""
    values = _collection(activation, rng)
    if isinstance(values, CELEvalError):
        return values
    out: list[Any] = []
    for value in values:
        _charge(charge)
        inner = activation.nested_activation(vars={var: value})
        r = celpy.evaluation.result(inner, keep)
        if isinstance(r, CELEvalError):
            return r
        if not isinstance(r, bool | celtypes.BoolType):
            return _not_bool(r)
        if r:
            v = celpy.evaluation.result(inner, body)
            if isinstance(v, CELEvalError):
                return v
            out.append(v)
    return celtypes.ListType(out)


_MACRO_CALL = re.compile(
    r"celpy\.evaluation\.macro_(all|exists_one|exists|map|filter)"
    r"\(activation, '(\w+)', ex_(\d+)_x, ex_\3_l\)"
)

_SUFFIX = "__kw"
_UNSAFE = frozenset(keyword.kwlist) | frozenset(dir(Activation()))


def _safe_name(name: str) -> str:
    """An injective renaming of the identifiers Python cannot carry as ``activation.NAME``
    (keywords, dunders, the ``Activation``'s own attributes): every renamed name ends in
    ``__kw``, and so does every name renamed because it already did."""
    if name in _UNSAFE or name.startswith("__") or name.endswith(_SUFFIX):
        return name + _SUFFIX
    return name


def _fold(tree: Any) -> None:
    """Drop pairs of ``!`` and of unary ``-``, as cel-go's parser does (``!!x`` is ``x``)."""
    for node in tree.iter_subtrees():
        while node.data == "unary" and len(node.children) == 2:
            op, inner = node.children
            if not (len(inner.children) == 2 and inner.children[0].data == op.data):
                break
            node.children = inner.children[1].children


def _rename(tree: Any) -> None:
    """Rename the identifiers Python cannot carry (:func:`_safe_name`)."""
    for node in tree.iter_subtrees():
        if node.data == "ident":
            token = node.children[0]
            safe = _safe_name(str(token))
            if safe != token:
                node.children[0] = token.update(value=safe)


def _literal(token: Any) -> tuple[celcost.T, int]:
    kind = token.type
    if kind in ("STRING_LIT", "MLSTRING_LIT"):
        return celcost.STRING, len(celstr(token))
    if kind == "BYTES_LIT":
        return celcost.BYTES, len(celbytes(token))
    return {
        "INT_LIT": celcost.INT,
        "UINT_LIT": celcost.UINT,
        "FLOAT_LIT": celcost.DOUBLE,
        "BOOL_LIT": celcost.BOOL,
        "NULL_LIT": celcost.NULL,
    }.get(kind, celcost.DYN), 1


class _Runner(celpy.CompiledRunner):
    """celpy's transpiled program, its comprehensions on this module's counting loops."""

    def __init__(self, environment: Any, ast: Any, comps: list[celcost.Comp],
                 plan: celcost.CostPlan) -> None:  # fmt: skip
        super().__init__(environment, ast, _FUNCTIONS)
        charges = {c.tree.expr_number: plan.per_iteration.get(id(c), 1) for c in comps}
        mapped = {  # map(x, p, f): celpy's template passes p only; f is added here
            c.tree.expr_number: c.tree.children[2].children[2].transpiled
            for c in comps
            if c.macro == "map" and len(c.tree.children[2].children) == 3
        }

        def patch(m: re.Match[str]) -> str:
            macro, var, n = m[1], m[2], int(m[3])
            if n in mapped:
                return (
                    f"kubesched.api.cel._macro_map_filter(activation, '{var}', ex_{n}_x, "
                    f"lambda activation: {mapped[n]}, ex_{n}_l, {charges[n]})"
                )
            return (
                f"kubesched.api.cel._macro_{macro}(activation, '{var}', ex_{n}_x, ex_{n}_l, "
                f"{charges[n]})"
            )

        source = _MACRO_CALL.sub(patch, self.tp.source_text)
        if "celpy.evaluation.macro_" in source:  # a macro form the estimate did not see
            raise ValueError("unsupported macro")
        self.tp.source_text = source
        self.tp.executable_code = compile(source, "<string>", "exec")


class Selector:
    """One compiled ``selectors[].cel.expression``."""

    __slots__ = ("_flat", "_program", "expression", "max_cost")

    def __init__(self, expression: str, program: Any, plan: celcost.CostPlan) -> None:
        self.expression = expression
        self._program = program
        self._flat = plan.flat
        self.max_cost = plan.max_cost
        """The worst-case cost estimate (cel-go's units)."""

    def matches(self, device_activation: dict[str, Any]) -> bool:
        """Evaluate on a device (:func:`activation`); :class:`CelRuntimeError` when the
        expression fails, does not yield a bool, or costs more than upstream's limit."""
        _SPENT[0] = 0
        try:
            _charge(self._flat)
            result = self._program.evaluate(device_activation)
        except _CostLimitExceeded:
            raise CelRuntimeError(_COST_LIMIT_MESSAGE) from None
        except CELEvalError as e:
            raise CelRuntimeError(_eval_message(e)) from None
        except AttributeError:  # a string method on a list attribute, say
            raise CelRuntimeError("no such overload") from None
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


def compile_selector(expression: str, path: str) -> Selector:
    """Compile ``expression`` once (cached by text).  What the API server refuses is an
    :class:`InputError` at ``path`` with its message: over 10 KiB, a syntax error or an
    undeclared identifier (``compilation failed:``), a cost estimate over the limit."""
    hit = _COMPILED.get(expression)
    if hit is not None:
        return hit
    if len(expression.encode("utf-8", "surrogatepass")) > celcost.MAX_LENGTH:
        raise InputError([(path, f"may not be more than {celcost.MAX_LENGTH} bytes")])
    if not expression.strip():
        raise InputError([(path, "compilation failed: empty expression")])
    if not _ENV:
        _ENV.append(celpy.Environment(runner_class=celpy.CompiledRunner))
    env = _ENV[0]
    try:
        ast = env.compile(expression)
        _fold(ast)
        root, comps = celcost.from_tree(ast, _literal)
        plan = celcost.estimate(root)
        if plan.max_cost > celcost.MAX_COST:
            raise InputError([(path, "too complex, exceeds cost limit")])
        _rename(ast)
        program = _Runner(env, ast, comps, plan)
    except CELParseError as e:
        where = " ".join(line.strip() for line in str(e).splitlines()[1:] if line.strip())
        detail = f"syntax error at {where}" if where else "syntax error"
        raise InputError([(path, f"compilation failed: {detail} in {expression!r}")]) from None
    except celcost.Undeclared as e:
        raise InputError([(path, f"compilation failed: {e}")]) from None
    except InputError:
        raise
    except RecursionError:
        raise InputError([(path, "compilation failed: expression nested too deeply")]) from None
    except Exception as e:  # celpy's transpiler raises plain errors for odd input
        raise InputError([(path, f"compilation failed: {e}")]) from None
    sel = Selector(expression, program, plan)
    _COMPILED[expression] = sel
    return sel
