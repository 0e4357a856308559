"""Node selector requirements compiled once and evaluated over node rows (upstream
``component-helpers/scheduling/corev1/nodeaffinity``), for the NodeAffinity plugin.

A requirement is validated as upstream's lazy parse does (an invalid one makes its term match
nothing); matching runs over ``rows`` (int64 ``(n,)`` node-table rows) with the table's
interned label codes, Gt/Lt per distinct label value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import IntArray
from kubesched.state.nodes import BoolArray, NodeTable

OBJECT_NAME_FIELD = "metadata.name"

Problems = list[tuple[str, str]]


# --------------------------------------------------------------------------- compiled forms
@dataclass(frozen=True, slots=True)
class Req:
    """A validated requirement; ``field`` for matchFields, ``number`` is Gt/Lt's operand."""

    key: str
    op: str
    values: tuple[str, ...]
    field: bool = False
    number: int = 0


@dataclass(frozen=True, slots=True)
class Term:
    """ANDed requirements; ``invalid`` terms (upstream parse errors) match nothing."""

    reqs: tuple[Req, ...]
    invalid: bool = False


@dataclass(frozen=True, slots=True)
class RequiredAffinity:
    """``nodeSelector`` pairs (None if empty) AND ORed ``terms`` (None without required)."""

    node_selector: tuple[tuple[str, str], ...] | None
    terms: tuple[Term, ...] | None

    def match_node(self, node: api.Node) -> tuple[bool, bool]:
        """(matches, parse-error seen) for one Node, as upstream ``Match`` (value, err)."""
        labels = node.labels
        if self.node_selector and any(labels.get(k) != v for k, v in self.node_selector):
            return False, False
        if self.terms is None:
            return True, False
        return terms_match(self.terms, labels, node.name)

    def mask(self, table: NodeTable, rows: IntArray) -> BoolArray:
        """bool ``(n,)``: True where the node at ``rows[i]`` satisfies this."""
        out = np.ones(rows.shape[0], dtype=np.bool_)
        for key, value in self.node_selector or ():
            code = table.label_values.get(key, {}).get(value, -2)
            out &= _codes(table, key, rows) == code
        if self.terms is not None:
            out &= terms_mask(self.terms, table, rows)
        return out


# --------------------------------------------------------------------------- compiling
_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _valid_key(key: str) -> bool:
    """Upstream ``IsQualifiedName``: ``[dns-subdomain/]name``, name at most 63 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and not (0 < len(prefix) <= 253 and _DNS_RE.match(prefix)):
        return False
    return len(name) <= 63 and bool(_NAME_RE.match(name))


def _label_req_problem(r: api.Requirement) -> tuple[str, str] | None:
    """The first reason upstream ``labels.NewRequirement`` rejects ``r`` (child path, text)."""
    op, vals = r.operator, r.values
    if op not in _LABEL_OPS:
        return "operator", f'Unsupported value: "{op}"'
    if not _valid_key(r.key):
        return "key", f'Invalid value: "{r.key}": not a qualified name'
    if op in ("In", "NotIn") and not vals:
        return "values", "for 'in', 'notin' operators, values set can't be empty"
    if op in ("Exists", "DoesNotExist") and vals:
        return "values", "values set must be empty for exists and does not exist"
    if op in ("Gt", "Lt") and (len(vals) != 1 or api.parse_int64(vals[0]) is None):
        return "values", "for 'Gt', 'Lt' operators, exactly one integer value is required"
    for i, v in enumerate(vals):
        if len(v) > 63 or not _VALUE_RE.match(v):
            return f"values[{i}]", f'Invalid value: "{v}": not a valid label value'
    return None


def _compile_req(r: api.Requirement, field: bool, path: str, problems: Problems) -> Req | None:
    """Validate one requirement (matchFields: In/NotIn with exactly one value)."""
    if field:
        bad = None if r.operator in ("In", "NotIn") else ("operator", "Unsupported value")
        if bad is None and len(r.values) != 1:
            bad = ("values", "must have one element")
    else:
        bad = _label_req_problem(r)
    if bad is not None:
        problems.append((f"{path}.{bad[0]}", bad[1]))
        return None
    number = api.parse_int64(r.values[0]) if r.operator in ("Gt", "Lt") else None
    return Req(r.key, r.operator, r.values, field, number or 0)


def compile_term(term: api.NodeSelectorTerm, path: str, problems: Problems) -> Term:
    """Validate and compile one term; any problem makes it ``invalid`` (matches nothing)."""
    before = len(problems)
    reqs = [
        _compile_req(r, False, f"{path}matchExpressions[{i}]", problems)
        for i, r in enumerate(term.match_expressions)
    ] + [
        _compile_req(r, True, f"{path}matchFields[{i}]", problems)
        for i, r in enumerate(term.match_fields)
    ]
    if len(problems) > before:
        return Term((), invalid=True)
    return Term(tuple(r for r in reqs if r is not None))


def compile_terms(
    terms: Sequence[api.NodeSelectorTerm], path: str, problems: Problems
) -> tuple[Term, ...]:
    """A node selector's terms, empty ones dropped (they select nothing)."""
    return tuple(
        compile_term(t, f"{path}nodeSelectorTerms[{i}].", problems)
        for i, t in enumerate(terms)
        if t.match_expressions or t.match_fields
    )


def compile_preferred(
    terms: Sequence[api.PreferredSchedulingTerm], path: str, problems: Problems
) -> tuple[tuple[int, Term], ...]:
    """Weighted preferred terms; weight-0 and empty terms are dropped, as upstream."""
    out = []
    for i, t in enumerate(terms):
        p = t.preference
        if t.weight == 0 or not (p.match_expressions or p.match_fields):
            continue
        term = compile_term(p, f"{path}[{i}].preference.", problems)
        if not term.invalid:
            out.append((t.weight, term))
    return tuple(out)


def required_affinity(pod: api.Pod) -> RequiredAffinity:
    """Upstream ``GetRequiredNodeAffinity``; parse errors only make terms invalid."""
    selector = tuple(pod.node_selector.items()) if pod.node_selector else None
    required = pod.node_affinity.required if pod.node_affinity else None
    terms = None if required is None else compile_terms(required, "", [])
    return RequiredAffinity(selector, terms)


def pod_preferred(pod: api.Pod, problems: Problems) -> tuple[tuple[int, Term], ...] | None:
    """The Pod's compiled preferred terms (None if it has none); errors go to ``problems``."""
    if pod.node_affinity is None or not pod.node_affinity.preferred:
        return None
    return compile_preferred(pod.node_affinity.preferred, "", problems)


def required_node_names(required: Sequence[api.NodeSelectorTerm]) -> set[str] | None:
    """Node names PreFilter can narrow to: None when some term lacks ``metadata.name In``."""
    names: set[str] | None = None
    for term in required:
        term_names: set[str] | None = None
        for r in term.match_fields:
            if r.key == OBJECT_NAME_FIELD and r.operator == "In":
                vals = set(r.values)
                term_names = vals if term_names is None else term_names & vals
        if term_names is None:
            return None
        names = term_names if names is None else names | term_names
    return names


# --------------------------------------------------------------------------- kernels
def _req_matches(req: Req, labels: Mapping[str, str], name: str) -> bool:
    if req.field:
        actual = name if req.key == OBJECT_NAME_FIELD else ""
        return (actual == req.values[0]) == (req.op == "In")
    value = labels.get(req.key)
    if req.op == "In":
        return value is not None and value in req.values
    if req.op == "NotIn":
        return value is None or value not in req.values
    if req.op == "Exists":
        return value is not None
    if req.op == "DoesNotExist":
        return value is None
    n = None if value is None else api.parse_int64(value)
    return n is not None and (n > req.number if req.op == "Gt" else n < req.number)


def terms_match(terms: Iterable[Term], labels: Mapping[str, str], name: str) -> tuple[bool, bool]:
    err = False
    for t in terms:
        if t.invalid:
            err = True
        elif all(_req_matches(r, labels, name) for r in t.reqs):
            return True, False
    return False, err


def match_node_selector_terms(
    terms: Sequence[api.NodeSelectorTerm], labels: Mapping[str, str], node_name: str
) -> bool:
    """Whether a node (its labels and name) matches ORed ``terms`` (upstream semantics)."""
    return terms_match(compile_terms(terms, "", []), labels, node_name)[0]


def _codes(table: NodeTable, key: str, rows: IntArray) -> np.ndarray[Any, np.dtype[np.int32]]:
    col = table.label_codes.get(key)
    return np.full(rows.shape[0], -1, dtype=np.int32) if col is None else col[rows]


def _req_mask(req: Req, table: NodeTable, rows: IntArray) -> BoolArray:
    if req.field:
        if req.key == OBJECT_NAME_FIELD:
            eq = rows == table.row_of.get(req.values[0], -1)
        else:
            eq = np.full(rows.shape[0], req.values[0] == "", dtype=np.bool_)
        return np.asarray(eq if req.op == "In" else ~eq, dtype=np.bool_)
    codes = _codes(table, req.key, rows)
    known = table.label_values.get(req.key, {})
    if req.op in ("In", "NotIn"):
        hit = np.isin(codes, [known[v] for v in req.values if v in known])
        return np.asarray(hit if req.op == "In" else ~hit, dtype=np.bool_)
    if req.op == "Exists":
        return codes >= 0
    if req.op == "DoesNotExist":
        return codes < 0
    lut = np.zeros(len(known) + 1, dtype=np.bool_)  # last slot: absent (-1)
    for value, code in known.items():
        n = api.parse_int64(value)
        lut[code] = n is not None and (n > req.number if req.op == "Gt" else n < req.number)
    return np.asarray(lut[codes], dtype=np.bool_)


def terms_mask(terms: Iterable[Term], table: NodeTable, rows: IntArray) -> BoolArray:
    """bool ``(n,)``: True where ``rows[i]`` matches any valid term (ORed; ANDed reqs)."""
    out = np.zeros(rows.shape[0], dtype=np.bool_)
    for t in terms:
        if t.invalid:
            continue
        hit = np.ones(rows.shape[0], dtype=np.bool_)
        for r in t.reqs:
            hit &= _req_mask(r, table, rows)
        out |= hit
    return out


def preferred_scores(
    terms: Iterable[tuple[int, Term]], table: NodeTable, rows: IntArray
) -> IntArray:
    """int64 ``(n,)``: summed weights of the terms each node matches."""
    scores = np.zeros(rows.shape[0], dtype=np.int64)
    for weight, term in terms:
        scores += weight * terms_mask((term,), table, rows)
    return scores
