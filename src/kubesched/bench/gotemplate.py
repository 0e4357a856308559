"""The Go ``text/template`` subset that scheduler_perf templates use.

Upstream renders every Node, Pod and ``createAny`` template with ``text/template``, the
environment being ``{"Index": i, "Count": n}`` plus the op's ``templateParams``, and the
function map of ``operations.go``: ``AddInt``, ``SubtractInt``, ``MultiplyInt``, ``DivideInt``,
``Mod`` (ints, truncating like Go) and ``AddFloat``, ``SubtractFloat``, ``MultiplyFloat``,
``DivideFloat``, plus ``div`` and ``mod`` (ints) that ``create.go`` adds for ``createAny``
and DRA templates.  This module handles exactly that: text, actions ``{{ pipeline }}`` with the
trim markers ``{{-`` / ``-}}``, comments ``{{/* */}}``, fields (``.Index``, ``.a.b``), int,
float, string and bool literals, calls of those functions, parentheses and pipes
(``{{.Index | AddInt 1}}``), and the conditionals the Workload API suites' templates use
(``{{if .priority}}..{{else if ..}}..{{else}}..{{end}}`` with Go's truth: false, 0, "", an
empty list or map and a missing field are false; the builtin ``eq``).  Values print as Go's
``%v`` does (``1e+06`` for a float of a million).

Deviation: anything else (``range``, ``with``, variables, ``printf``, an unknown field printed
or compared) is rejected when the template is parsed or rendered, where Go would run it or
print ``<no value>``: a benchmark whose objects silently differ from upstream's is worse than
one that refuses to run.  The one missing field allowed is the whole condition of an ``if``
(``{{if .priority}}``), which Go reads as false: that is how upstream's templates test for
an optional param.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from kubesched.api.errors import InputError

_KEYWORDS = frozenset(
    ("if", "else", "end", "range", "with", "define", "template", "block", "break", "continue")
)
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<paren>[()|])
    | (?P<string>"(?:[^"\\]|\\.)*"|`[^`]*`)
    | (?P<number>[+-]?(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))
    | (?P<field>(?:\.[A-Za-z_]\w*)+|\.)
    | (?P<ident>[A-Za-z_]\w*)
    | (?P<other>\S+)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "0": "\0"}
_SPACE = " \t\r\n"


class TemplateError(Exception):
    """A template that cannot be parsed or rendered (the message names the action)."""


# ------------------------------------------------------------------ functions (operations.go)
def to_float(value: Any) -> float:
    """Upstream ``toFloat64``: numbers and numeric strings; anything else is an error."""
    if isinstance(value, bool):
        raise TemplateError(f"cannot cast {go_format(value)} to float64")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise TemplateError(f"cannot cast {go_format(value)} to float64")


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


def _basic_kind(value: Any) -> str:
    """Go's ``basicKind`` for a decoded YAML value (``eq``'s comparison classes)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if value is None:
        raise TemplateError("error calling eq: invalid type for comparison")
    raise TemplateError("error calling eq: non-comparable type")


def _eq(*xs: Any) -> bool:
    """Go's builtin ``eq arg1 arg2...``: ``arg1`` equals any later argument (same kind)."""
    if len(xs) < 2:
        raise TemplateError("error calling eq: missing argument for comparison")
    kind = _basic_kind(xs[0])
    for other in xs[1:]:
        if _basic_kind(other) != kind:
            raise TemplateError("error calling eq: incompatible types for comparison")
        if other == xs[0]:
            return True
    return False


def go_true(value: Any) -> bool:
    """Go's ``isTrue`` for a decoded YAML value (None: a missing field)."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str | list | dict):
        return len(value) > 0
    return True


FUNCS: dict[str, tuple[int | None, Callable[..., Any]]] = {
    "AddFloat": (None, _add),
    "AddInt": (None, lambda *xs: go_int(_add(*xs))),
    "DivideFloat": (2, _divide),
    "DivideInt": (2, lambda a, b: go_int(_divide(a, b))),
    "Mod": (2, _mod),
    "MultiplyFloat": (None, _mul),
    "MultiplyInt": (None, lambda *xs: go_int(_mul(*xs))),
    "SubtractFloat": (2, lambda a, b: to_float(a) - to_float(b)),
    "SubtractInt": (2, lambda a, b: go_int(to_float(a) - to_float(b))),
    "div": (2, _div),
    "eq": (None, _eq),
    "mod": (2, _mod),
}
"""Function name to (number of arguments or None for variadic, implementation)."""


def go_format(value: Any) -> str:
    """``fmt.Sprint(value)`` for the values a template produces."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if value is None:
        return "<nil>"
    return str(value)


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
    _, digit_tuple, exponent = Decimal(repr(abs(f))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    exp = len(digits) + int(exponent) - 1  # position of the first digit
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    if len(digits) <= exp + 1:
        return sign + digits + "0" * (exp + 1 - len(digits))
    return f"{sign}{digits[: exp + 1]}.{digits[exp + 1 :]}"


# ------------------------------------------------------------------ expressions
class Expr:
    """A parsed operand or pipeline; ``evaluate(env)`` returns its value."""

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """The value of this expression in ``env``."""
        raise NotImplementedError


class Literal(Expr):
    """A constant."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        return self.value


class Field(Expr):
    """``.Name`` or ``.a.b``: a key of the environment (nested maps for dotted paths);
    ``missing_ok`` (the whole condition of an ``if``): a missing key is None, not an error."""

    def __init__(self, path: tuple[str, ...], missing_ok: bool = False) -> None:
        self.path = path
        self.missing_ok = missing_ok

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        value: Any = env
        for i, key in enumerate(self.path):
            if not isinstance(value, Mapping) or key not in value:
                if self.missing_ok and i == len(self.path) - 1 and isinstance(value, Mapping):
                    return None  # Go: a map's missing key is the invalid value, false
                shown = "." + ".".join(self.path[: i + 1])
                known = ", ".join("." + k for k in sorted(env)) or "none"
                raise TemplateError(f"unknown field {shown} (known: {known})")
            value = value[key]
        return value


class Call(Expr):
    """A call of one of :data:`FUNCS`; ``piped`` is the previous command's value, if any."""

    def __init__(self, name: str, args: list[Expr]) -> None:
        self.name = name
        self.args = args

    def evaluate(self, env: Mapping[str, Any], piped: tuple[Any, ...] = ()) -> Any:
        arity, fn = FUNCS[self.name]
        values = [a.evaluate(env) for a in self.args] + list(piped)
        if arity is not None and len(values) != arity:
            raise TemplateError(
                f"wrong number of args for {self.name}: want {arity} got {len(values)}"
            )
        return fn(*values)


class Pipeline(Expr):
    """``cmd | cmd | ...``: each later command (a call) gets the value as its last argument."""

    def __init__(self, commands: list[Expr]) -> None:
        self.commands = commands

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        value = self.commands[0].evaluate(env)
        for cmd in self.commands[1:]:
            assert isinstance(cmd, Call)
            value = cmd.evaluate(env, (value,))
        return value


class _Parser:
    """Recursive descent over the tokens of one action."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup
            if kind is None:
                continue
            self.tokens.append((kind, m.group(kind)))
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def pipeline(self) -> Pipeline:
        commands = [self.command()]
        while (tok := self.peek()) is not None and tok[1] == "|":
            self.pos += 1
            cmd = self.command()
            if not isinstance(cmd, Call):
                raise TemplateError("only a function call can follow '|'")
            commands.append(cmd)
        return Pipeline(commands)

    def command(self) -> Expr:
        operands: list[Expr] = []
        head: str | None = None
        while (tok := self.peek()) is not None and tok[1] not in ("|", ")"):
            self.pos += 1
            kind, text = tok
            if kind == "ident" and not operands and head is None and text in FUNCS:
                head = text
                continue
            operands.append(self.operand(kind, text))
        if head is not None:
            return Call(head, operands)
        if not operands:
            raise TemplateError("missing value for command")
        if len(operands) > 1:
            raise TemplateError("can't give argument to non-function")
        return operands[0]

    def operand(self, kind: str, text: str) -> Expr:
        if kind == "paren" and text == "(":
            inner = self.pipeline()
            tok = self.peek()
            if tok is None or tok[1] != ")":
                raise TemplateError("unclosed left paren")
            self.pos += 1
            return inner
        if kind == "number":
            return Literal(_number(text))
        if kind == "string":
            return Literal(_string(text))
        if kind == "field":
            if text == ".":
                raise TemplateError("'.' (the whole environment) is not supported; name a field")
            return Field(tuple(text[1:].split(".")))
        if kind == "ident":
            if text in ("true", "false"):
                return Literal(text == "true")
            if text in _KEYWORDS:
                raise TemplateError(f"unsupported action {text!r}")
            if text in FUNCS:
                raise TemplateError(f"{text} must be called first in a command or in parens")
            raise TemplateError(f'function "{text}" not defined (known: {", ".join(FUNCS)})')
        raise TemplateError(f"unsupported expression {text!r}")


def _number(text: str) -> int | float:
    clean = text.replace("_", "")
    if re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", clean):
        return int(clean, 16)
    if re.fullmatch(r"[+-]?\d+", clean):
        return int(clean)
    return float(clean)


def _string(text: str) -> str:
    if text.startswith("`"):
        return text[1:-1]
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), body)


# ------------------------------------------------------------------ templates
class If:
    """``{{if c1}}..{{else if c2}}..{{else}}..{{end}}``: the parts of the first branch whose
    condition is true in Go's sense (:func:`go_true`), else the ``else`` parts."""

    def __init__(self, condition: Expr, line: int) -> None:
        self.branches: list[tuple[Expr, int, list[str | tuple[Expr, int] | If]]] = [
            (condition, line, [])
        ]
        self.otherwise: list[str | tuple[Expr, int] | If] | None = None

    @property
    def current(self) -> list[str | tuple[Expr, int] | If]:
        """The parts the parser adds to now (the last branch opened)."""
        return self.otherwise if self.otherwise is not None else self.branches[-1][2]

    def chosen(self, env: Mapping[str, Any]) -> list[str | tuple[Expr, int] | If]:
        """The parts to render in ``env``."""
        for condition, _line, parts in self.branches:
            if go_true(condition.evaluate(env)):
                return parts
        return self.otherwise or []

    @property
    def line(self) -> int:
        """The line of the ``{{if}}`` (for errors)."""
        return self.branches[0][1]


class Template:
    """A parsed template: literal text, actions and conditionals, rendered by :meth:`render`."""

    def __init__(self, parts: Sequence[str | tuple[Expr, int] | If], source: str) -> None:
        self.parts = list(parts)
        self.source = source

    @property
    def static(self) -> bool:
        """True when the template has no action (it renders to the same text always)."""
        return all(isinstance(p, str) for p in self.parts)

    def render(self, env: Mapping[str, Any]) -> str:
        """The text for ``env``; :class:`InputError` naming the source and line on failure."""
        out: list[str] = []
        self._render(self.parts, env, out)
        return "".join(out)

    def _render(
        self, parts: Sequence[str | tuple[Expr, int] | If], env: Mapping[str, Any], out: list[str]
    ) -> None:
        for part in parts:
            if isinstance(part, str):
                out.append(part)
                continue
            try:
                if isinstance(part, If):
                    line = part.line
                    chosen = part.chosen(env)
                else:
                    expr, line = part
                    out.append(go_format(expr.evaluate(env)))
                    continue
            except TemplateError as err:
                raise InputError([(f"line {line}", f"template: {err}")], file=self.source) from None
            self._render(chosen, env, out)


def _find_close(text: str, start: int) -> int:
    """Index of the ``}}`` closing the action that starts at ``start`` (quotes skipped)."""
    i, quote = start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in '"`':
            quote = c
        elif text.startswith("}}", i):
            return i
        i += 1
    return -1


def _expression(body: str, *, condition: bool = False) -> Expr:
    """The pipeline of one action; ``condition``: an ``if``'s, where a bare missing field
    is false rather than an error."""
    parser = _Parser(body)
    expr = parser.pipeline()
    if parser.peek() is not None:
        raise TemplateError(f"unexpected {parser.peek()[1]!r} in action")  # type: ignore[index]
    if condition and len(expr.commands) == 1 and isinstance(expr.commands[0], Field):
        field = expr.commands[0]
        return Field(field.path, missing_ok=True)
    return expr


def _keyword(body: str) -> tuple[str, str]:
    """(``if`` / ``else`` / ``end`` or "", the rest of the action)."""
    word, _, rest = body.strip(_SPACE).partition(" ")
    return (word, rest.strip(_SPACE)) if word in ("if", "else", "end") else ("", body)


def parse(text: str, source: str = "<template>") -> Template:
    """Parse ``text``; :class:`InputError` (file ``source``, field ``line N``) if malformed."""
    root: list[str | tuple[Expr, int] | If] = []
    open_ifs: list[If] = []
    pos = 0
    trim_next = False

    def target() -> list[str | tuple[Expr, int] | If]:
        return open_ifs[-1].current if open_ifs else root

    while True:
        open_at = text.find("{{", pos)
        chunk = text[pos:] if open_at < 0 else text[pos:open_at]
        if trim_next:
            chunk = chunk.lstrip(_SPACE)
        if open_at < 0:
            target().append(chunk)
            break
        line = text.count("\n", 0, open_at) + 1
        close_at = _find_close(text, open_at + 2)
        if close_at < 0:
            raise InputError([(f"line {line}", "template: unclosed action")], file=source)
        body = text[open_at + 2 : close_at]
        if len(body) >= 2 and body[0] == "-" and body[1] in _SPACE:
            chunk, body = chunk.rstrip(_SPACE), body[2:]
        trim_next = len(body) >= 2 and body[-1] == "-" and body[-2] in _SPACE
        if trim_next:
            body = body[:-2]
        target().append(chunk)
        pos = close_at + 2
        stripped = body.strip(_SPACE)
        if stripped.startswith("/*") and stripped.endswith("*/"):
            continue
        try:
            _action(body, line, open_ifs, target)
        except TemplateError as err:
            raise InputError(
                [(f"line {line}", f"template: {{{{{body.strip()}}}}}: {err}")], file=source
            ) from None
    if open_ifs:
        line = open_ifs[-1].branches[0][1]
        raise InputError(
            [(f"line {line}", "template: unexpected EOF: {{if}} without {{end}}")], file=source
        )
    return Template(_without_empty(root), source)


def _action(
    body: str,
    line: int,
    open_ifs: list[If],
    target: Callable[[], list[str | tuple[Expr, int] | If]],
) -> None:
    """Add one action (an expression, or an ``if`` / ``else`` / ``end``) to the parts."""
    word, rest = _keyword(body)
    if word == "if":
        if not rest:
            raise TemplateError("missing value for if")
        node = If(_expression(rest, condition=True), line)
        target().append(node)
        open_ifs.append(node)
    elif word == "else":
        if not open_ifs or open_ifs[-1].otherwise is not None:
            raise TemplateError("unexpected {{else}}")
        node = open_ifs[-1]
        inner, cond = _keyword(rest)
        if inner == "if":
            node.branches.append((_expression(cond, condition=True), line, []))
        elif rest:
            raise TemplateError(f"unexpected {rest!r} after else")
        else:
            node.otherwise = []
    elif word == "end":
        if rest:
            raise TemplateError(f"unexpected {rest!r} after end")
        if not open_ifs:
            raise TemplateError("unexpected {{end}}")
        open_ifs.pop()
    else:
        target().append((_expression(body), line))


def _without_empty(
    parts: list[str | tuple[Expr, int] | If],
) -> list[str | tuple[Expr, int] | If]:
    out = [p for p in parts if p != ""]
    for p in out:
        if isinstance(p, If):
            p.branches = [(c, n, _without_empty(ps)) for c, n, ps in p.branches]
            if p.otherwise is not None:
                p.otherwise = _without_empty(p.otherwise)
    return out


def render(text: str, env: Mapping[str, Any], source: str = "<template>") -> str:
    """Parse and render in one step."""
    return parse(text, source).render(env)
