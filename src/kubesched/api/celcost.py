"""The cost of a DRA CEL selector, as Kubernetes estimates it before accepting the selector.

The API server refuses a ``selectors[].cel.expression`` whose worst-case cost, estimated by
cel-go's checker (``checker.Cost``) with Kubernetes' ``library.CostEstimator`` and the DRA
size estimator of ``k8s.io/dynamic-resource-allocation/cel`` (v0.34), is over
``CELSelectorExpressionMaxCost`` (1,000,000 units): ``too complex, exceeds cost limit``.
This module is that estimate, ported to the parse tree of ``celpy`` (which has no cost
support): each expression and its macros are expanded as cel-go expands them (``all`` into a
fold with ``@not_strictly_false``, ``map`` into list concatenation, ...), types are inferred
as far as the estimate needs them (which overload a call resolves to; whether a select reads
a map or an object), and sizes come from literals and from the API's limits on a device (32
attributes or capacities, domains of 63 characters, ids of 32, values of 64, driver names of
63).

It also gives what the runtime limit (:mod:`kubesched.api.cel`) charges: the same estimate
with each comprehension's loop left out (``flat``), and per comprehension the cost of one
iteration, so that evaluation can count what it actually runs.

Working on celpy's ``lark`` trees without importing celpy (only :mod:`kubesched.api.cel`
does), through ``tree.data`` / ``tree.children`` and tokens' ``type`` / ``value``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_COST",
    "MAX_LENGTH",
    "Comp",
    "CostPlan",
    "Undeclared",
    "estimate",
    "from_tree",
]

MAX_COST = 1_000_000
"""``resourceapi.CELSelectorExpressionMaxCost``: the estimate the API server accepts, and
the cost at which kube-scheduler cancels an evaluation."""

MAX_LENGTH = 10 * 1024
"""``resourceapi.CELSelectorExpressionMaxLength`` (bytes)."""

U64 = (1 << 64) - 1
_TWO64 = float(1 << 64)

# k8s.io/api/resource/v1: the limits the DRA size estimator declares for `device`.
_ATTRS_PER_DEVICE = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
_DOMAIN_LEN = 63  # DeviceMaxDomainLength
_ID_LEN = 32  # DeviceMaxIDLength
_VALUE_LEN = 64  # DeviceAttributeMaxValueLength
_DRIVER_LEN = 63  # DriverNameMaxLength

_TRAVERSAL = 0.1  # common.StringTraversalCostFactor
_REGEX = 0.25  # common.RegexStringLengthCostFactor
_LIST_CREATE = 10
_MAP_CREATE = 30
_STRUCT_CREATE = 40

ACCU = "@result"


# --------------------------------------------------------------------------- arithmetic
def _add(a: int, b: int) -> int:
    return min(a + b, U64)


def _mul(a: int, b: int) -> int:
    return min(a * b, U64)


def _factor(x: int, y: float) -> int:
    """cel-go's ``multiplyByCostFactor``: float64 arithmetic, rounded up, saturating."""
    xf = float(x)
    if xf > 0 and y > 0 and xf > float(U64) / y:
        return U64
    c = math.ceil(xf * y)
    return U64 if c >= _TWO64 else int(c)


@dataclass(frozen=True, slots=True)
class R:
    """A ``[lo, hi]`` range of sizes or costs (cel-go's ``SizeEstimate`` / ``CostEstimate``)."""

    lo: int
    hi: int

    def add(self, o: R) -> R:
        return R(_add(self.lo, o.lo), _add(self.hi, o.hi))

    def mul(self, o: R) -> R:
        return R(_mul(self.lo, o.lo), _mul(self.hi, o.hi))

    def factor(self, y: float) -> R:
        return R(_factor(self.lo, y), _factor(self.hi, y))

    def union(self, o: R) -> R:
        return R(min(self.lo, o.lo), max(self.hi, o.hi))


UNKNOWN = R(0, U64)
ZERO = R(0, 0)
ONE = R(1, 1)


def _fixed(n: int) -> R:
    return R(n, n)


# --------------------------------------------------------------------------- types
# A type is a tuple: ("int",), ("list", elem), ("map", key, value), ("dyn",), ("any",) (an
# attribute value: cel.AnyType), ("device",), ("quantity",), ("semver",), ("type",), ...
T = tuple[Any, ...]
DYN: T = ("dyn",)
ANY: T = ("any",)
BOOL: T = ("bool",)
INT: T = ("int",)
UINT: T = ("uint",)
DOUBLE: T = ("double",)
STRING: T = ("string",)
BYTES: T = ("bytes",)
NULL: T = ("null",)
TYPE: T = ("type",)
QUANTITY: T = ("quantity",)
SEMVER: T = ("semver",)
DEVICE: T = ("device",)
_ATTRIBUTES: T = ("map", STRING, ("map", STRING, ANY))
_CAPACITY: T = ("map", STRING, ("map", STRING, QUANTITY))

_SCALARS = {"bool", "int", "uint", "double", "duration", "timestamp"}
_STRUCTS = {"device", "quantity", "semver"}
_TYPE_NAMES = {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type",
               "type", "dyn"}  # fmt: skip
DECLARED = {"device", *_TYPE_NAMES}
"""The identifiers the DRA environment declares (everything else is an undeclared
reference, a compile error upstream)."""


def _dynamic(t: T) -> bool:
    return t[0] in ("dyn", "any")


def _may_be(t: T, kind: str) -> bool:
    return _dynamic(t) or t[0] == kind


# --------------------------------------------------------------------------- the expanded AST
class Node:
    __slots__ = ()


@dataclass(eq=False, slots=True)
class Lit(Node):
    type: T
    size: int


@dataclass(eq=False, slots=True)
class Ident(Node):
    name: str
    line: int = 1
    column: int = 1


@dataclass(eq=False, slots=True)
class Select(Node):
    operand: Node
    field: str
    test_only: bool = False


@dataclass(eq=False, slots=True)
class Call(Node):
    function: str
    args: list[Node]
    target: Node | None = None


@dataclass(eq=False, slots=True)
class ListLit(Node):
    elements: list[Node]


@dataclass(eq=False, slots=True)
class MapLit(Node):
    entries: list[tuple[Node, Node]]


@dataclass(eq=False, slots=True)
class Struct(Node):
    fields: list[Node]


@dataclass(eq=False, slots=True)
class Comp(Node):
    """A comprehension as cel-go's parser expands a macro; ``tree`` is the celpy node it
    came from (its ``expr_number`` names the transpiled macro)."""

    macro: str
    iter_var: str
    iter_range: Node
    accu_init: Node
    loop_condition: Node
    loop_step: Node
    result: Node
    tree: Any = None


@dataclass(eq=False, slots=True)
class Bind(Node):
    var: str
    init: Node
    body: Node


class Undeclared(Exception):
    """An identifier the environment does not declare (upstream's compile error)."""

    def __init__(self, name: str, line: int, column: int) -> None:
        super().__init__(
            f"ERROR: <input>:{line}:{column}: undeclared reference to {name!r} (in container '')"
        )


# --------------------------------------------------------------------------- from celpy's tree
_MACROS = {"all", "exists", "exists_one", "map", "filter"}
_BINARY = {
    "relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
    "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in",
    "addition_add": "_+_", "addition_sub": "_-_",
    "multiplication_mul": "_*_", "multiplication_div": "_/_", "multiplication_mod": "_%_",
}  # fmt: skip


_PASS = {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
         "unary", "member", "primary", "paren_expr"}  # fmt: skip


def _is_tree(x: Any) -> bool:
    return hasattr(x, "data")


def _pos(tree: Any) -> tuple[int, int]:
    meta = getattr(tree, "meta", None)
    line = getattr(meta, "line", None) if meta is not None else None
    col = getattr(meta, "column", None) if meta is not None else None
    return (line or 1, (col or 1))


@dataclass(slots=True)
class _Builder:
    literal: Callable[[Any], tuple[T, int]]
    scope: list[str] = field(default_factory=list)
    comps: list[Comp] = field(default_factory=list)

    def build(self, t: Any) -> Node:
        while True:  # through one-child rules without recursing (deep parentheses)
            d = t.data
            ch = [c for c in t.children if c is not None]
            if d in _PASS and len(ch) == 1:
                t = ch[0]
                continue
            break
        if d == "expr":
            if len(ch) == 1:
                return self.build(ch[0])
            return Call("_?_:_", [self.build(c) for c in ch])
        if d in ("conditionalor", "conditionaland", "relation", "addition", "multiplication"):
            if len(ch) == 1:
                return self.build(ch[0])
            op, right = ch
            if d == "conditionalor":
                return Call("_||_", [self.build(op), self.build(right)])
            if d == "conditionaland":
                return Call("_&&_", [self.build(op), self.build(right)])
            fn = _BINARY[op.data]
            left = self.build(op.children[0])
            return Call(fn, [left, self.build(right)])
        if d == "unary":
            if len(ch) == 1:
                return self.build(ch[0])
            op, operand = ch
            return Call("!_" if op.data == "unary_not" else "-_", [self.build(operand)])
        if d in ("member", "primary", "paren_expr"):
            return self.build(ch[0])
        if d == "member_dot":
            return Select(self.build(ch[0]), str(ch[1]))
        if d == "member_dot_arg":
            return self._member_call(t, ch)
        if d == "member_index":
            return Call("_[_]", [self.build(ch[0]), self.build(ch[1])])
        if d == "member_object":
            fields = ch[1].children[1::2] if len(ch) > 1 else []
            return Struct([self.build(f) for f in fields])
        if d in ("dot_ident_arg", "ident_arg"):
            name = str(ch[0])
            args = self._args(ch[1] if len(ch) > 1 else None)
            if d == "ident_arg" and name == "has" and len(args) == 1:
                arg = args[0]
                if isinstance(arg, Select):
                    return Select(arg.operand, arg.field, test_only=True)
            return Call(name, args)
        if d in ("dot_ident", "ident"):
            line, col = _pos(t)
            name = str(ch[0])
            if name not in self.scope and name not in DECLARED:
                raise Undeclared(name, line, col)
            return Ident(name, line, col)
        if d == "list_lit":
            return ListLit(self._args(ch[0] if ch else None))
        if d == "map_lit":
            items = [self.build(c) for c in ch[0].children] if ch else []
            return MapLit(list(zip(items[0::2], items[1::2], strict=True)))
        if d == "literal":
            typ, size = self.literal(ch[0])
            return Lit(typ, size)
        raise ValueError(f"unexpected CEL parse node {d!r}")  # pragma: no cover

    def _args(self, exprlist: Any) -> list[Node]:
        return [self.build(c) for c in exprlist.children] if exprlist is not None else []

    def _bound_name(self, exprlist: Any) -> str | None:
        """The identifier a macro binds (its first argument), if that is a bare identifier."""
        node = exprlist.children[0]
        while _is_tree(node) and node.data != "ident":
            kids = [c for c in node.children if c is not None]
            if len(kids) != 1 or not _is_tree(kids[0]):
                return None
            node = kids[0]
        return str(node.children[0]) if _is_tree(node) else None

    def _member_call(self, t: Any, ch: list[Any]) -> Node:
        member, name = ch[0], str(ch[1])
        exprlist: Any = ch[2] if len(ch) > 2 else None
        kids: list[Any] = list(exprlist.children) if exprlist is not None else []
        nargs = len(kids)
        var = self._bound_name(exprlist) if exprlist is not None else None
        if name in _MACROS and var is not None and (nargs == 2 or (name == "map" and nargs == 3)):
            rng = self.build(member)
            self.scope.append(var)
            try:
                args = [self.build(c) for c in kids[1:]]
            finally:
                self.scope.pop()
            comp = _expand(name, var, rng, args, t)
            self.comps.append(comp)
            return comp
        if name == "bind" and nargs == 3 and var is not None and _ident_named(member, "cel"):
            init = self.build(kids[1])
            self.scope.append(var)
            try:
                body = self.build(kids[2])
            finally:
                self.scope.pop()
            return Bind(var, init, body)
        return Call(name, self._args(exprlist), target=self.build(member))


def _ident_named(tree: Any, name: str) -> bool:
    while _is_tree(tree) and tree.data in ("member", "primary"):
        tree = tree.children[0]
    return _is_tree(tree) and tree.data == "ident" and str(tree.children[0]) == name


def _expand(macro: str, var: str, rng: Node, args: list[Node], tree: Any) -> Comp:
    """cel-go's parser expansions (parser/macro.go)."""
    accu = Ident(ACCU)

    def comp(init: Node, cond: Node, step: Node, result: Node) -> Comp:
        return Comp(macro, var, rng, init, cond, step, result, tree)

    if macro == "all":
        return comp(
            Lit(BOOL, 1), Call("@not_strictly_false", [accu]), Call("_&&_", [accu, args[0]]), accu
        )
    if macro == "exists":
        return comp(
            Lit(BOOL, 1),
            Call("@not_strictly_false", [Call("!_", [accu])]),
            Call("_||_", [accu, args[0]]),
            accu,
        )
    if macro == "exists_one":
        step = Call("_?_:_", [args[0], Call("_+_", [accu, Lit(INT, 1)]), accu])
        return comp(Lit(INT, 1), Lit(BOOL, 1), step, Call("_==_", [accu, Lit(INT, 1)]))
    if macro == "map":
        append = Call("_+_", [accu, ListLit([args[-1]])])
        step = append if len(args) == 1 else Call("_?_:_", [args[0], append, accu])
        return comp(ListLit([]), Lit(BOOL, 1), step, accu)
    # filter
    append = Call("_+_", [accu, ListLit([Ident(var)])])
    return comp(ListLit([]), Lit(BOOL, 1), Call("_?_:_", [args[0], append, accu]), accu)


def from_tree(tree: Any, literal: Callable[[Any], tuple[T, int]]) -> tuple[Node, list[Comp]]:
    """The expanded AST of a celpy parse tree, and its comprehensions (outermost last);
    :class:`Undeclared` for an identifier the environment lacks. ``literal`` gives a literal
    token's type and size (characters of a string, bytes of a bytes literal, else 1)."""
    b = _Builder(literal)
    return b.build(tree), b.comps


# --------------------------------------------------------------------------- the estimator
@dataclass(slots=True)
class _Decl:
    """A node of the DRA size estimator's declaration of ``device``."""

    max_elements: int
    fields: dict[str, _Decl] = field(default_factory=dict)
    key: _Decl | None = None
    elem: _Decl | None = None


_ATTRIBUTE_DECL = _Decl(_VALUE_LEN)


def _device_decl() -> _Decl:
    domain, ident = _Decl(_DOMAIN_LEN), _Decl(_ID_LEN)
    inner_attrs = _Decl(_ATTRS_PER_DEVICE, key=ident, elem=_ATTRIBUTE_DECL)
    inner_caps = _Decl(_ATTRS_PER_DEVICE, key=ident, elem=_Decl(0))
    return _Decl(
        0,
        fields={
            "driver": _Decl(_DRIVER_LEN),
            "allowMultipleAllocations": _Decl(0),
            "attributes": _Decl(_ATTRS_PER_DEVICE, key=domain, elem=inner_attrs),
            "capacity": _Decl(_ATTRS_PER_DEVICE, key=domain, elem=inner_caps),
        },
    )


_DEVICE_DECL = _device_decl()


def _size_from_path(path: Sequence[str] | None) -> R | None:
    """The DRA ``sizeEstimator``: sizes of what ``device`` reaches."""
    if not path or path[0] != "device":
        return None
    node: _Decl | None = _DEVICE_DECL
    for name in path[1:]:
        assert node is not None
        if name in ("@items", "@values"):
            node = node.elem
        elif name == "@keys":
            node = node.key
        else:
            f = node.fields.get(name)
            if f is None:
                if node.elem is _ATTRIBUTE_DECL:
                    node = _ATTRIBUTE_DECL
                    continue
                return None
            node = f
        if node is None:
            return None
    assert node is not None
    return R(0, node.max_elements)


@dataclass(slots=True)
class _Entry:
    """cel-go's ``entrySizeEstimate``."""

    container: str
    key: R
    val: R

    def union(self, o: _Entry | None) -> _Entry | None:
        if o is None:
            return None
        return _Entry(self.container, self.key.union(o.key), self.val.union(o.val))


@dataclass(slots=True)
class _Var:
    path: list[str] | None
    size: R | None
    entry: _Entry | None
    type: T


@dataclass(slots=True)
class CostPlan:
    """What :func:`estimate` found: the estimate, and what evaluation charges."""

    max_cost: int
    """The worst case (cel-go's ``CostEstimate.Max``); over :data:`MAX_COST` the API
    server refuses the selector."""
    flat: int
    """The estimate with every comprehension's iterations left out: charged once."""
    per_iteration: dict[int, int]
    """Per comprehension (``id()`` of its :class:`Comp`): one iteration's loop condition and
    step, with nested comprehensions' iterations left out (they charge their own)."""
    type: T


class _Coster:
    def __init__(self, flat: bool) -> None:
        self.flat = flat
        self.paths: dict[int, list[str]] = {}
        self.sizes: dict[int, R] = {}
        self.entries: dict[int, _Entry] = {}
        self.types: dict[int, T] = {}
        self.vars: dict[str, list[_Var]] = {}
        self.per_iteration: dict[int, int] = {}

    # -- bookkeeping (cel-go's coster helpers)
    def var(self, name: str) -> _Var | None:
        stack = self.vars.get(name)
        return stack[-1] if stack else None

    def push(self, name: str, v: _Var) -> None:
        self.vars.setdefault(name, []).append(v)

    def pop(self, name: str) -> None:
        self.vars[name].pop()

    def path(self, e: Node) -> list[str] | None:
        if isinstance(e, Ident):
            v = self.var(e.name)
            if v is not None:
                return v.path
        return self.paths.get(id(e))

    def type(self, e: Node) -> T:
        return self.types.get(id(e), DYN)

    def entry(self, e: Node) -> _Entry | None:
        hit = self.entries.get(id(e))
        if hit is not None:
            return hit
        if isinstance(e, Ident):
            v = self.var(e.name)
            if v is not None:
                return v.entry
        return None

    def size(self, e: Node) -> R | None:
        """cel-go's ``computeSize``."""
        hit = self.sizes.get(id(e))
        if hit is not None:
            return hit
        if isinstance(e, Lit):
            return _fixed(e.size)
        if isinstance(e, ListLit):
            return _fixed(len(e.elements))
        if isinstance(e, MapLit):
            return _fixed(len(e.entries))
        path = self.path(e)
        if path and path[0] in (ACCU,):
            path = None
        est = _size_from_path(path)
        if est is not None:
            self.sizes[id(e)] = est
            return est
        if self.type(e)[0] in _SCALARS:
            return ONE
        if isinstance(e, Ident):
            v = self.var(e.name)
            if v is not None and v.size is not None:
                return v.size
        return None

    def size_or_unknown(self, e: Node) -> R:
        s = self.size(e)
        return UNKNOWN if s is None else s

    # -- cost
    def cost(self, e: Node) -> R:
        if isinstance(e, Lit):
            self.types[id(e)] = e.type
            return ZERO
        if isinstance(e, Ident):
            return self.cost_ident(e)
        if isinstance(e, Select):
            return self.cost_select(e)
        if isinstance(e, Call):
            return self.cost_call(e)
        if isinstance(e, ListLit):
            return self.cost_list(e)
        if isinstance(e, MapLit):
            return self.cost_map(e)
        if isinstance(e, Struct):
            total = ZERO
            for f in e.fields:
                total = total.add(self.cost(f))
            return total.add(_fixed(_STRUCT_CREATE))
        if isinstance(e, Bind):
            return self.cost_bind(e)
        assert isinstance(e, Comp)
        return self.cost_comprehension(e)

    def cost_ident(self, e: Ident) -> R:
        v = self.var(e.name)
        if v is not None:
            if v.path is not None:
                self.paths[id(e)] = v.path
            self.types[id(e)] = v.type
        else:
            self.paths[id(e)] = [e.name]
            self.types[id(e)] = DEVICE if e.name == "device" else TYPE
        return ONE

    def cost_select(self, e: Select) -> R:
        total = self.cost(e.operand)
        if e.test_only:
            # Kubernetes' environment: presence tests cost nothing (PresenceTestHasCost(false)).
            self.types[id(e)] = BOOL
            return total
        t = self.type(e.operand)
        if t[0] in ("map", "device", "quantity", "semver"):
            total = total.add(ONE)
        if t[0] == "device":
            self.types[id(e)] = {"driver": STRING, "attributes": _ATTRIBUTES,
                                 "capacity": _CAPACITY,
                                 "allowMultipleAllocations": BOOL}.get(e.field, DYN)  # fmt: skip
        elif t[0] == "map":
            self.types[id(e)] = t[2]
        else:
            self.types[id(e)] = DYN
        base = self.path(e.operand)
        self.paths[id(e)] = [*(base or []), e.field]
        return total

    def cost_list(self, e: ListLit) -> R:
        total = ZERO
        item = R(U64, 0) if e.elements else ZERO
        types: set[T] = set()
        for el in e.elements:
            total = total.add(self.cost(el))
            item = item.union(self.size_or_unknown(el))
            types.add(self.type(el))
        self.entries[id(e)] = _Entry("list", ONE, item)
        self.types[id(e)] = ("list", types.pop() if len(types) == 1 else DYN)
        return total.add(_fixed(_LIST_CREATE))

    def cost_map(self, e: MapLit) -> R:
        total = ZERO
        key = R(U64, 0) if e.entries else ZERO
        val = R(U64, 0) if e.entries else ZERO
        ktypes: set[T] = set()
        vtypes: set[T] = set()
        for k, v in e.entries:
            total = total.add(self.cost(k)).add(self.cost(v))
            key = key.union(self.size_or_unknown(k))
            val = val.union(self.size_or_unknown(v))
            ktypes.add(self.type(k))
            vtypes.add(self.type(v))
        self.entries[id(e)] = _Entry("map", key, val)
        self.types[id(e)] = (
            "map",
            ktypes.pop() if len(ktypes) == 1 else DYN,
            vtypes.pop() if len(vtypes) == 1 else DYN,
        )
        return total.add(_fixed(_MAP_CREATE))

    def _iter_var(self, c: Comp) -> _Var:
        """cel-go's ``pushIterSingle``."""
        entry = self.entry(c.iter_range)
        rt = self.type(c.iter_range)
        container = entry.container if entry is not None else rt[0]
        path = list(self.path(c.iter_range) or [])
        if container == "list":
            size = entry.val if entry is not None else None
            typ = rt[1] if rt[0] == "list" else DYN
            return _Var([*path, "@items"], size, None, typ)
        size = entry.key if entry is not None else None
        typ = rt[1] if rt[0] == "map" else DYN
        return _Var([*path, "@keys"], size, None, typ)

    def _local(self, e: Node) -> _Var:
        """cel-go's ``pushLocalVar``."""
        return _Var(self.path(e), self.size(e), self.entry(e), self.type(e))

    def cost_comprehension(self, c: Comp) -> R:
        total = self.cost(c.iter_range).add(self.cost(c.accu_init))
        accu_type: T = {"all": BOOL, "exists": BOOL, "exists_one": INT}.get(c.macro, ("list", DYN))
        accu = self._local(c.accu_init)
        accu.type = accu_type
        self.push(ACCU, accu)
        self.push(c.iter_var, self._iter_var(c))
        loop = self.cost(c.loop_condition)
        step = self.cost(c.loop_step)
        if c.macro in ("map", "filter"):
            appended = _appended(c.loop_step)
            if appended is not None:
                accu.type = self.type(appended)
        self.pop(c.iter_var)
        total = total.add(self.cost(c.result))
        self.pop(ACCU)
        count = self.size_or_unknown(c.iter_range)
        per = step.add(loop)
        self.per_iteration[id(c)] = per.hi
        if not self.flat:
            total = total.add(count.mul(per))
        if isinstance(c.accu_init, Lit):
            lit = self.size(c.accu_init)
            if lit is not None:
                self.sizes[id(c)] = lit
        elif isinstance(c.accu_init, ListLit | MapLit):
            self.sizes[id(c)] = count
            step_entry = self.entry(c.loop_step)
            if step_entry is not None:
                self.entries[id(c)] = step_entry
        self.types[id(c)] = accu.type if c.macro in ("map", "filter") else accu_type
        return total

    def cost_bind(self, e: Bind) -> R:
        total = _fixed(_LIST_CREATE).add(self.cost(e.init))  # the empty iteration range
        self.push(e.var, self._local(e.init))
        total = total.add(self.cost(e.body))
        self.pop(e.var)
        s = self.size(e.body)
        if s is not None:
            self.sizes[id(e)] = s
        ent = self.entry(e.body)
        if ent is not None:
            self.entries[id(e)] = ent
        self.types[id(e)] = self.type(e.body)
        return total

    def cost_call(self, e: Call) -> R:
        if e.function == "dyn" and len(e.args) == 1 and e.target is None:
            c = self.cost(e.args[0])
            s = self.size(e.args[0])
            if s is not None:
                self.sizes[id(e)] = s
            ent = self.entry(e.args[0])
            if ent is not None:
                self.entries[id(e)] = ent
            self.types[id(e)] = DYN
            return ONE.add(c)
        arg_costs = [self.cost(a) for a in e.args]
        total = ZERO
        if e.target is not None:
            total = total.add(self.cost(e.target))
        fn, result_size = self.function_cost(e, arg_costs)
        if result_size is None:
            result_size = self.size(e)
        if result_size is not None:
            self.sizes[id(e)] = result_size
        return total.add(fn)

    def function_cost(self, e: Call, arg_costs: list[R]) -> tuple[R, R | None]:
        """cel-go's ``functionCost`` after Kubernetes' ``EstimateCallCost``, over the
        overloads the arguments' types allow."""
        fn, args, target = e.function, e.args, e.target
        argsum = ZERO
        for c in arg_costs:
            argsum = argsum.add(c)
        ts = [self.type(a) for a in args]
        tt = self.type(target) if target is not None else None
        self.types[id(e)] = _result_type(fn, tt, ts)
        if fn == "_&&_" or fn == "_||_":
            lhs, rhs = arg_costs
            return R(lhs.lo, lhs.add(rhs).hi), None
        if fn == "_?_:_":
            size = self.size_or_unknown(args[1]).union(self.size_or_unknown(args[2]))
            a, b = self.entry(args[1]), self.entry(args[2])
            ent = a.union(b) if a is not None else None
            if ent is not None:
                self.entries[id(e)] = ent
            self.types[id(e)] = ts[1] if ts[1] == ts[2] else DYN
            return arg_costs[0].add(arg_costs[1].union(arg_costs[2])), size
        # Kubernetes' library.CostEstimator
        if fn in ("quantity", "isQuantity", "semver", "isSemver") and args:
            return self.size_or_unknown(args[0]).factor(_TRAVERSAL).add(argsum), None
        if fn in _K8S_UNIT:
            return ONE.add(argsum), None
        if fn in ("lowerAscii", "upperAscii", "trim") and target is not None:
            sz = self.size_or_unknown(target)
            return sz.factor(_TRAVERSAL).add(argsum), sz
        if fn == "_==_" and len(args) == 2 and ts[0] == ts[1] and ts[0] in (QUANTITY, SEMVER):
            return ONE.add(argsum), None
        # cel-go's standard library
        if fn in ("startsWith", "endsWith") and target is not None and len(args) == 1:
            return self.size_or_unknown(args[0]).factor(_TRAVERSAL).add(argsum), None
        if fn == "matches" and target is not None and len(args) == 1:
            s = self.size_or_unknown(target).add(ONE).factor(_TRAVERSAL)
            r = self.size_or_unknown(args[0]).factor(_REGEX)
            return s.mul(r).add(argsum), None
        if fn == "contains" and target is not None and len(args) == 1:
            s = self.size_or_unknown(target).factor(_TRAVERSAL)
            r = self.size_or_unknown(args[0]).factor(_TRAVERSAL)
            return s.mul(r).add(argsum), None
        if fn == "@in" and len(args) == 2:
            options: list[R] = []
            if _may_be(ts[1], "list"):
                options.append(self.size_or_unknown(args[1]).factor(1).add(argsum))
            if _may_be(ts[1], "map") or not options:
                options.append(ONE.add(argsum))
            return _union(options), None
        if fn == "_[_]" and len(args) == 2:
            ent = self.entry(args[0])
            base = self.path(args[0]) or []
            t0 = ts[0]
            if t0[0] == "list" or (
                t0[0] not in ("map",) and ent is not None and ent.container == "list"
            ):
                self.paths[id(e)] = [*base, "@items"]
            else:
                self.paths[id(e)] = [*base, "@values"]
            return ONE.add(argsum), ent.val if ent is not None else self.size(e)
        if fn == "_+_" and len(args) == 2:
            options = []
            result: R | None = None
            lhs, rhs = self.size_or_unknown(args[0]), self.size_or_unknown(args[1])
            both = lhs.add(rhs)
            ea, eb = self.entry(args[0]), self.entry(args[1])
            ent = ea.union(eb) if ea is not None else None
            for kind in ("string", "bytes", "list"):
                if _may_be(ts[0], kind) and _may_be(ts[1], kind):
                    result = both
                    if ent is not None:
                        self.entries[id(e)] = ent
                    options.append(
                        ONE.add(argsum) if kind == "list" else both.factor(_TRAVERSAL).add(argsum)
                    )
            numeric = any(
                _may_be(ts[0], k) and _may_be(ts[1], k) for k in ("int", "uint", "double")
            )
            if numeric or not options:
                options.append(ONE.add(argsum))
            return _union(options), result
        if fn in _ORDERING and len(args) == 2:
            options = []
            if any(_may_be(ts[0], k) and _may_be(ts[1], k) for k in ("string", "bytes")):
                options.append(self._smallest(args).add(argsum))
            if not options or any(_may_be(ts[0], k) for k in _ORDERED_SCALARS):
                options.append(ONE.add(argsum))
            return _union(options), None
        if fn in ("_==_", "_!=_") and len(args) == 2:
            return self._smallest(args).add(argsum), None
        return ONE.add(argsum), None

    def _smallest(self, args: list[Node]) -> R:
        a, b = self.size_or_unknown(args[0]), self.size_or_unknown(args[1])
        hi = min(a.hi, b.hi)
        return R(1 if hi > 0 else 0, hi).factor(_TRAVERSAL)


_K8S_UNIT = {"sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan",
             "isLessThan", "compareTo", "add", "sub", "major", "minor", "patch"}  # fmt: skip
_ORDERING = {"_<_", "_<=_", "_>_", "_>=_"}
_ORDERED_SCALARS = ("int", "uint", "double", "bool", "timestamp", "duration")

_RESULT_TYPES: dict[str, T] = {
    "_==_": BOOL, "_!=_": BOOL, "_<_": BOOL, "_<=_": BOOL, "_>_": BOOL, "_>=_": BOOL,
    "@in": BOOL, "!_": BOOL, "_&&_": BOOL, "_||_": BOOL, "@not_strictly_false": BOOL,
    "size": INT, "startsWith": BOOL, "endsWith": BOOL, "matches": BOOL, "contains": BOOL,
    "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES,
    "bool": BOOL, "type": TYPE, "quantity": QUANTITY, "isQuantity": BOOL,
    "semver": SEMVER, "isSemver": BOOL, "compareTo": INT, "isGreaterThan": BOOL,
    "isLessThan": BOOL, "add": QUANTITY, "sub": QUANTITY, "isInteger": BOOL,
    "asInteger": INT, "asApproximateFloat": DOUBLE, "sign": INT, "major": INT,
    "minor": INT, "patch": INT, "lowerAscii": STRING, "upperAscii": STRING, "trim": STRING,
}  # fmt: skip


def _result_type(fn: str, target: T | None, args: list[T]) -> T:
    hit = _RESULT_TYPES.get(fn)
    if hit is not None:
        return hit
    if fn in ("_+_", "_-_", "_*_", "_/_", "_%_") and len(args) == 2:
        return args[0] if args[0] == args[1] and not _dynamic(args[0]) else DYN
    if fn == "-_" and args:
        return args[0] if not _dynamic(args[0]) else DYN
    if fn == "_[_]" and len(args) == 2:
        t = args[0]
        if t[0] == "list":
            return t[1]  # type: ignore[no-any-return]
        if t[0] == "map":
            return t[2]  # type: ignore[no-any-return]
    return DYN


def _appended(step: Node) -> Node | None:
    """The ``[x]`` a ``map`` / ``filter`` step appends (its type is the result's)."""
    if isinstance(step, Call) and step.function == "_?_:_":
        step = step.args[1]
    if isinstance(step, Call) and step.function == "_+_" and isinstance(step.args[1], ListLit):
        return step.args[1]
    return None


def _union(options: list[R]) -> R:
    out = options[0]
    for o in options[1:]:
        out = out.union(o)
    return out


def estimate(root: Node) -> CostPlan:
    """The worst-case cost of ``root`` (:func:`from_tree`), and what evaluation charges."""
    full = _Coster(flat=False)
    max_cost = full.cost(root).hi
    flat = _Coster(flat=True)
    flat_cost = flat.cost(root).hi
    per = {k: max(1, min(v, MAX_COST + 1)) for k, v in flat.per_iteration.items()}
    return CostPlan(max_cost, min(flat_cost, MAX_COST + 1), per, full.type(root))
