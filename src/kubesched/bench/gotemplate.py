"""The Go ``text/template`` that scheduler_perf templates use: parse tree and walk.

Upstream renders every Node, Pod and ``createAny`` template with ``text/template``, the
data being ``{"Index": i, "Count": n}`` plus the op's ``templateParams`` (numbers decoded
as float64: :func:`~kubesched.bench.gofuncs.go_data`), with the function map of
``operations.go`` (:mod:`kubesched.bench.gofuncs`).  This module parses and walks templates as
Go does for what those templates use:

- text, actions ``{{ pipeline }}`` with the trim markers ``{{-`` / ``-}}``, comments
  ``{{/* */}}``;
- operands: fields of dot (``.Index``, ``.a.b``), dot itself (``.``), variables (``$``,
  ``$x``, ``$x.a``), ``nil``, int, float, string and bool literals, calls, parentheses and
  pipes (``{{.Index | AddInt 1}}``);
- variables: ``{{$x := pipeline}}`` declares (an action with a declaration prints nothing),
  ``{{$x = pipeline}}`` assigns; a variable lives to the ``{{end}}`` of the control structure
  it is declared in (or the end of the template), checked when the template is parsed
  (``undefined variable "$x"``); ``$`` is the data;
- ``{{if p}}..{{else if q}}..{{else}}..{{end}}`` with Go's truth (false, 0, "", an empty
  list or map, nil and a missing key are false);
- ``{{range p}}..{{else}}..{{end}}`` over an int (Go 1.22: ``0..n-1``; a negative count
  runs the ``else``), a list or a map (sorted keys), ``.`` the element, with
  ``{{range $e := p}}`` or ``{{range $i, $e := p}}``; a missing value runs the ``else``;
- ``and`` / ``or`` returning the first false / true argument (else the last), evaluated
  left to right and no further, and the builtins of :mod:`~kubesched.bench.gofuncs`.

A missing map key evaluates to Go's invalid value (:class:`~kubesched.bench.gofuncs.Missing`),
so ``{{$n := or .numDevices 10}}`` takes 10 when the param is absent, and ``JSON`` of it is
``null``.  Values print as Go's ``%v`` (``1e+06`` for a float of a million).

Deviation: printing a missing key or a nil (Go prints ``<no value>``) is refused, naming the
field and the keys there are, and so is everything else Go has and these templates do not
use (``with``, ``define``, ``template``, ``block``, ``break``, ``continue``, ``printf`` and
the other functions, a field of a parenthesized value), where Go would run it: a benchmark
whose objects silently differ from upstream's is worse than one that refuses to run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import InputError
from kubesched.bench.gofuncs import (
    FUNCS,
    NO_VALUE,
    SHORT_CIRCUIT,
    Missing,
    TemplateError,
    go_format,
    go_true,
    go_type,
)

__all__ = ["Template", "TemplateError", "parse", "render"]

_KEYWORDS = frozenset(
    ("if", "else", "end", "range", "with", "define", "template", "block", "break", "continue")
)
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<paren>[()|,])
    | (?P<declare>:=)
    | (?P<assign>=)
    | (?P<string>"(?:[^"\\]|\\.)*"|`[^`]*`)
    | (?P<number>[+-]?(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))
    | (?P<field>(?:\.[A-Za-z_]\w*)+|\.)
    | (?P<var>\$\w*(?:\.[A-Za-z_]\w*)*)
    | (?P<ident>[A-Za-z_]\w*)
    | (?P<other>\S+)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "0": "\0"}
_SPACE = " \t\r\n"
_ROOT = "$"


# ------------------------------------------------------------------ the walk's state
@dataclass(slots=True)
class _Var:
    """One variable of the stack."""

    name: str
    value: Any


class State:
    """The variable stack of one execution (Go's ``state.vars``): declarations push,
    control structures pop back to their mark at their end."""

    def __init__(self, data: Any) -> None:
        self.vars: list[_Var] = [_Var(_ROOT, data)]

    def mark(self) -> int:
        """The stack's height, to :meth:`pop` back to."""
        return len(self.vars)

    def pop(self, mark: int) -> None:
        """Drop the variables declared since ``mark``."""
        del self.vars[mark:]

    def push(self, name: str, value: Any) -> None:
        """Declare ``name``."""
        self.vars.append(_Var(name, value))

    def _slot(self, name: str) -> _Var:
        for slot in reversed(self.vars):
            if slot.name == name:
                return slot
        raise TemplateError(f"undefined variable: {name}")

    def get(self, name: str) -> Any:
        """The innermost ``name``'s value."""
        return self._slot(name).value

    def set(self, name: str, value: Any) -> None:
        """Assign the innermost ``name``."""
        self._slot(name).value = value

    def set_top(self, n: int, value: Any) -> None:
        """Assign the ``n``-th variable from the top (range's per-iteration values)."""
        self.vars[-n].value = value


def _lookup(receiver: Any, path: Sequence[str], shown: str) -> Any:
    """``receiver.a.b``: each step a map key; a missing key is :class:`Missing` (and so is
    anything further down it), a step into anything but a map an error."""
    value = receiver
    for i, key in enumerate(path):
        if isinstance(value, Missing):
            return value
        if value is None:
            raise TemplateError(f"nil pointer evaluating interface {{}}.{key}")
        if not isinstance(value, Mapping):
            raise TemplateError(f"can't evaluate field {key} in type {go_type(value)}")
        if key not in value:
            known = ", ".join("." + str(k) for k in sorted(value)) or "none"
            return Missing(f"unknown field {shown}.{'.'.join(path[: i + 1])} (known: {known})")
        value = value[key]
    return value


# ------------------------------------------------------------------ expressions
class Expr:
    """A parsed operand, command or pipeline; ``evaluate`` returns its value."""

    def evaluate(self, state: State, dot: Any) -> Any:
        """The value of this expression with variables ``state`` and ``dot``."""
        raise NotImplementedError


@dataclass
class Literal(Expr):
    """A constant (``nil`` is :data:`~kubesched.bench.gofuncs.NO_VALUE`)."""

    value: Any

    def evaluate(self, state: State, dot: Any) -> Any:
        return self.value


@dataclass
class Field(Expr):
    """``.`` (empty path), ``.Name`` or ``.a.b`` of dot."""

    path: tuple[str, ...]

    def evaluate(self, state: State, dot: Any) -> Any:
        return _lookup(dot, self.path, "") if self.path else dot


@dataclass
class Variable(Expr):
    """``$``, ``$x`` or ``$x.a.b``."""

    name: str
    path: tuple[str, ...]

    def evaluate(self, state: State, dot: Any) -> Any:
        value = state.get(self.name)
        return _lookup(value, self.path, "" if self.name == _ROOT else self.name)


@dataclass
class Call(Expr):
    """A call of one of :data:`~kubesched.bench.gofuncs.FUNCS` or ``and`` / ``or``."""

    name: str
    args: list[Expr]

    def evaluate(self, state: State, dot: Any, piped: tuple[Any, ...] = ()) -> Any:
        if self.name in SHORT_CIRCUIT:
            return self._short_circuit(state, dot, piped)
        arity, fn = FUNCS[self.name]
        values = [a.evaluate(state, dot) for a in self.args] + list(piped)
        if arity is not None and len(values) != arity:
            raise TemplateError(
                f"wrong number of args for {self.name}: want {arity} got {len(values)}"
            )
        try:
            return fn(*values)
        except TemplateError as err:
            raise TemplateError(f"error calling {self.name}: {err}") from None

    def _short_circuit(self, state: State, dot: Any, piped: tuple[Any, ...]) -> Any:
        """Go's ``and`` / ``or``: the first argument false / true, else the last."""
        if not self.args and not piped:
            raise TemplateError(f"wrong number of args for {self.name}: want at least 1 got 0")
        want = self.name == "or"
        value: Any = NO_VALUE
        for arg in self.args:
            value = arg.evaluate(state, dot)
            if go_true(value) == want:
                return value
        return piped[0] if piped else value


@dataclass
class Pipeline(Expr):
    """``$a := cmd | cmd ...``: each later command (a call) gets the value as its last
    argument; ``decls`` are declared (or assigned, ``assign``) the result."""

    commands: list[Expr]
    decls: tuple[str, ...] = ()
    assign: bool = False

    def evaluate(self, state: State, dot: Any) -> Any:
        value = self.commands[0].evaluate(state, dot)
        for cmd in self.commands[1:]:
            assert isinstance(cmd, Call)
            value = cmd.evaluate(state, dot, (value,))
            value = NO_VALUE if value is None else value
        value = NO_VALUE if value is None else value  # Go unwraps a nil interface
        for name in self.decls:
            if self.assign:
                state.set(name, value)
            else:
                state.push(name, value)
        return value


class _Parser:
    """Recursive descent over the tokens of one action; ``scope`` the variables declared
    so far (the parse-time check of Go's parser)."""

    def __init__(self, tokens: list[tuple[str, str]], scope: list[str]) -> None:
        self.tokens = tokens
        self.scope = scope
        self.pos = 0

    def peek(self, ahead: int = 0) -> tuple[str, str] | None:
        i = self.pos + ahead
        return self.tokens[i] if i < len(self.tokens) else None

    def done(self) -> None:
        if (tok := self.peek()) is not None:
            raise TemplateError(f"unexpected {tok[1]!r} in action")

    def declarations(self, max_vars: int) -> tuple[tuple[str, ...], bool]:
        """``$a :=`` / ``$a =`` (or ``$a, $b :=`` with ``max_vars`` 2) at the start."""
        names: list[str] = []
        i = 0
        while (tok := self.peek(i)) is not None and tok[0] == "var" and "." not in tok[1]:
            names.append(tok[1])
            nxt = self.peek(i + 1)
            if nxt is not None and nxt[0] in ("declare", "assign"):
                if len(names) > max_vars:
                    raise TemplateError("too many declarations in command")
                self.pos += i + 2
                assign = nxt[0] == "assign"
                for name in names:
                    if assign:
                        self.use(name)
                    self.scope.append(name)
                return tuple(names), assign
            if nxt is None or nxt[1] != "," or len(names) >= max_vars:
                break
            i += 2
        return (), False

    def use(self, name: str) -> None:
        if name not in self.scope:
            raise TemplateError(f'undefined variable "{name}"')

    def pipeline(self, max_vars: int = 1) -> Pipeline:
        decls, assign = self.declarations(max_vars)
        commands = [self.command()]
        while (tok := self.peek()) is not None and tok[1] == "|":
            self.pos += 1
            cmd = self.command()
            if not isinstance(cmd, Call):
                raise TemplateError("only a function call can follow '|'")
            commands.append(cmd)
        return Pipeline(commands, decls, assign)

    def command(self) -> Expr:
        operands: list[Expr] = []
        head: str | None = None
        while (tok := self.peek()) is not None and tok[1] not in ("|", ")"):
            self.pos += 1
            kind, text = tok
            if kind == "ident" and not operands and head is None and _is_func(text):
                head = text
                continue
            operands.append(self.operand(kind, text))
        if head is not None:
            return Call(head, operands)
        if not operands:
            raise TemplateError("missing value for command")
        if len(operands) > 1:
            raise TemplateError("can't give argument to non-function")
        if operands[0] == Literal(NO_VALUE):
            raise TemplateError("nil is not a command")
        return operands[0]

    def operand(self, kind: str, text: str) -> Expr:
        if kind == "paren" and text == "(":
            inner = self.pipeline(max_vars=0)
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
            return Field(tuple(text[1:].split(".")) if text != "." else ())
        if kind == "var":
            name, *path = text.split(".")
            self.use(name)
            return Variable(name, tuple(path))
        if kind == "ident":
            if text in ("true", "false"):
                return Literal(text == "true")
            if text == "nil":
                return Literal(NO_VALUE)
            if text in _KEYWORDS:
                raise TemplateError(f"unsupported action {text!r}")
            if _is_func(text):
                return Call(text, [])
            known = ", ".join(sorted((*FUNCS, *SHORT_CIRCUIT)))
            raise TemplateError(f'function "{text}" not defined (known: {known})')
        raise TemplateError(f"unsupported expression {text!r}")


def _is_func(name: str) -> bool:
    return name in FUNCS or name in SHORT_CIRCUIT


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        if m.lastgroup is not None:
            out.append((m.lastgroup, m.group(m.lastgroup)))
    return out


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


# ------------------------------------------------------------------ the tree
@dataclass
class Action:
    """``{{pipeline}}``: prints the value unless the pipeline declares or assigns."""

    pipe: Pipeline
    line: int

    def walk(self, state: State, dot: Any, out: list[str]) -> None:
        value = self.pipe.evaluate(state, dot)
        if self.pipe.decls:
            return
        if isinstance(value, Missing):
            if value is NO_VALUE:
                raise TemplateError("nil or no value printed (Go prints <no value>)")
            raise TemplateError(value.what)
        out.append(go_format(value))


@dataclass
class If:
    """``{{if c1}}..{{else if c2}}..{{else}}..{{end}}``: the parts of the first branch whose
    condition is true in Go's sense, else the ``else`` parts."""

    branches: list[tuple[Pipeline, int, list[Any]]]
    otherwise: list[Any] | None = None

    @property
    def line(self) -> int:
        """The line of the ``{{if}}``."""
        return self.branches[0][1]

    @property
    def current(self) -> list[Any]:
        """The parts the parser adds to now (the last branch opened)."""
        return self.otherwise if self.otherwise is not None else self.branches[-1][2]

    def open_else(self, line: int) -> None:
        """``{{else}}`` seen."""
        if self.otherwise is not None:
            raise TemplateError("unexpected {{else}}")
        self.otherwise = []

    def walk(self, state: State, dot: Any, out: list[str]) -> None:
        mark = state.mark()
        try:
            for condition, line, parts in self.branches:
                try:
                    truth = go_true(condition.evaluate(state, dot))
                except TemplateError as err:
                    raise _AtLine(line, err) from None
                if truth:
                    _walk(parts, state, dot, out)
                    return
            if self.otherwise is not None:
                _walk(self.otherwise, state, dot, out)
        finally:
            state.pop(mark)


@dataclass
class Range:
    """``{{range [$i,] [$e :=] p}}..{{else}}..{{end}}``: the body once per element (dot
    the element), else the ``else`` parts."""

    pipe: Pipeline
    line: int
    body: list[Any] = field(default_factory=list)
    otherwise: list[Any] | None = None

    @property
    def current(self) -> list[Any]:
        """The parts the parser adds to now."""
        return self.otherwise if self.otherwise is not None else self.body

    def open_else(self, line: int) -> None:
        """``{{else}}`` seen."""
        if self.otherwise is not None:
            raise TemplateError("unexpected {{else}}")
        self.otherwise = []

    def _items(self, value: Any) -> list[tuple[Any, Any]]:
        """(index, element) pairs as Go's ``walkRange`` goes through them."""
        if isinstance(value, int) and not isinstance(value, bool):
            if len(self.pipe.decls) > 1:
                raise TemplateError(f"can't use {value} to iterate over more than one variable")
            return [(NO_VALUE, i) for i in range(value)]
        if isinstance(value, list):
            return list(enumerate(value))
        if isinstance(value, Mapping):
            return [(k, value[k]) for k in sorted(value)]
        if isinstance(value, Missing):
            return []
        raise TemplateError(f"range can't iterate over {go_format(value)}")

    def walk(self, state: State, dot: Any, out: list[str]) -> None:
        outer = state.mark()
        try:
            try:
                items = self._items(self.pipe.evaluate(state, dot))
            except TemplateError as err:
                raise _AtLine(self.line, err) from None
            mark = state.mark()
            decls = self.pipe.decls
            for index, elem in items:
                if decls and self.pipe.assign:
                    state.set(decls[0], index if len(decls) > 1 else elem)
                    if len(decls) > 1:
                        state.set(decls[1], elem)
                elif decls:
                    state.set_top(1, elem)
                    if len(decls) > 1:
                        state.set_top(2, index)
                _walk(self.body, state, elem, out)
                state.pop(mark)
            if not items and self.otherwise is not None:
                _walk(self.otherwise, state, dot, out)
        finally:
            state.pop(outer)


class _AtLine(Exception):
    """A :class:`TemplateError` at a template line (raised through the walk)."""

    def __init__(self, line: int, err: TemplateError) -> None:
        super().__init__(str(err))
        self.line = line


def _walk(parts: Sequence[Any], state: State, dot: Any, out: list[str]) -> None:
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, Action):
            try:
                part.walk(state, dot, out)
            except TemplateError as err:
                raise _AtLine(part.line, err) from None
        else:
            part.walk(state, dot, out)


class Template:
    """A parsed template, rendered by :meth:`render`."""

    def __init__(self, parts: Sequence[Any], source: str) -> None:
        self.parts = list(parts)
        self.source = source

    @property
    def static(self) -> bool:
        """True when the template has no action (it renders to the same text always)."""
        return all(isinstance(p, str) for p in self.parts)

    def render(self, data: Mapping[str, Any]) -> str:
        """The text for ``data``; :class:`InputError` naming the source and line on failure."""
        out: list[str] = []
        try:
            _walk(self.parts, State(data), data, out)
        except _AtLine as err:
            raise InputError([(f"line {err.line}", f"template: {err}")], file=self.source) from None
        return "".join(out)


# ------------------------------------------------------------------ parsing
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


@dataclass
class _Open:
    """A control structure being parsed and the variable scope's height at its start."""

    node: If | Range
    scope_mark: int


class _TreeBuilder:
    """The parts of a template as its actions arrive, with Go's parse-time scopes."""

    def __init__(self) -> None:
        self.root: list[Any] = []
        self.open: list[_Open] = []
        self.scope: list[str] = [_ROOT]

    def target(self) -> list[Any]:
        return self.open[-1].node.current if self.open else self.root

    def action(self, body: str, line: int) -> None:
        tokens = _tokens(body)
        word = tokens[0][1] if tokens and tokens[0][0] == "ident" else ""
        rest = _Parser(tokens[1:], self.scope)
        if word in ("if", "range"):
            mark = len(self.scope)
            if rest.peek() is None:
                raise TemplateError(f"missing value for {word}")
            pipe = rest.pipeline(max_vars=2 if word == "range" else 1)
            rest.done()
            node: If | Range = If([(pipe, line, [])]) if word == "if" else Range(pipe, line)
            self.target().append(node)
            self.open.append(_Open(node, mark))
        elif word == "else":
            if not self.open:
                raise TemplateError("unexpected {{else}}")
            node = self.open[-1].node
            if rest.peek() is not None and rest.peek() == ("ident", "if") and isinstance(node, If):
                if node.otherwise is not None:
                    raise TemplateError("unexpected {{else}}")
                rest.pos += 1
                pipe = rest.pipeline()
                rest.done()
                node.branches.append((pipe, line, []))
            elif rest.peek() is not None:
                raise TemplateError(f"unexpected {rest.peek()[1]!r} after else")  # type: ignore[index]
            else:
                node.open_else(line)
        elif word == "end":
            rest.done()
            if not self.open:
                raise TemplateError("unexpected {{end}}")
            del self.scope[self.open.pop().scope_mark :]
        else:
            parser = _Parser(tokens, self.scope)
            pipe = parser.pipeline()
            parser.done()
            self.target().append(Action(pipe, line))


def parse(text: str, source: str = "<template>") -> Template:
    """Parse ``text``; :class:`InputError` (file ``source``, field ``line N``) if malformed."""
    tree = _TreeBuilder()
    pos = 0
    trim_next = False
    while True:
        open_at = text.find("{{", pos)
        chunk = text[pos:] if open_at < 0 else text[pos:open_at]
        if trim_next:
            chunk = chunk.lstrip(_SPACE)
        if open_at < 0:
            tree.target().append(chunk)
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
        tree.target().append(chunk)
        pos = close_at + 2
        stripped = body.strip(_SPACE)
        if stripped.startswith("/*") and stripped.endswith("*/"):
            continue
        try:
            tree.action(body, line)
        except TemplateError as err:
            raise InputError(
                [(f"line {line}", f"template: {{{{{body.strip()}}}}}: {err}")], file=source
            ) from None
    if tree.open:
        node = tree.open[-1].node
        word = "if" if isinstance(node, If) else "range"
        line = node.line
        raise InputError(
            [(f"line {line}", f"template: unexpected EOF: {{{{{word}}}}} without {{{{end}}}}")],
            file=source,
        )
    return Template(_without_empty(tree.root), source)


def _without_empty(parts: list[Any]) -> list[Any]:
    out = [p for p in parts if p != ""]
    for p in out:
        if isinstance(p, If):
            p.branches = [(c, n, _without_empty(ps)) for c, n, ps in p.branches]
        elif isinstance(p, Range):
            p.body = _without_empty(p.body)
        if isinstance(p, If | Range) and p.otherwise is not None:
            p.otherwise = _without_empty(p.otherwise)
    return out


def render(text: str, data: Mapping[str, Any], source: str = "<template>") -> str:
    """Parse and render in one step."""
    return parse(text, source).render(data)
