"""NodeAffinity ``addedAffinity`` parsing with upstream's scheduler-side validation.

Upstream validates ``NodeAffinityArgs.addedAffinity`` by building the selectors
(``component-helpers/scheduling/corev1/nodeaffinity.NewNodeSelector`` and
``NewPreferredSchedulingTerms``), which check label keys and values, operators and value
counts, and report every problem.  This module does the same on the raw mapping and returns
:class:`kubesched.api.objects.NodeAffinity`.

Paths are upstream's: preferred-term problems are reported under
``preferredDuringSchedulingIgnoredDuringExecution[i].matchFields[j]...`` (upstream leaves out
``.preference``), and a bad label value under ``values[k][<key>]``.  Empty terms and preferred
terms of weight 0 are not validated (upstream skips them), but are kept.

kubesched.api.fields parses Pod affinity fail-fast with API-server messages; the config
needs all problems at once with the scheduler's messages, hence this private parser.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import fielderr as fe
from kubesched.api import objects as api
from kubesched.config.decode import Decoder

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_LABEL_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPS = ("In", "NotIn")


def _requirements(dec: Decoder, value: Any, path: str) -> list[api.Requirement]:
    """Decode a list of ``{key, operator, values}`` (no semantic checks)."""
    reqs: list[api.Requirement] = []
    for i, item in enumerate(dec.lst(value, path)):
        p = fe.index(path, i)
        d = dec.obj(item, p, ("key", "operator", "values"))
        if d is None:
            continue
        key = dec.string(d.get("key"), fe.join(p, "key")) or ""
        op = dec.string(d.get("operator"), fe.join(p, "operator")) or ""
        values = []
        for k, v in enumerate(dec.lst(d.get("values"), fe.join(p, "values"))):
            s = dec.string(v, fe.index(fe.join(p, "values"), k))
            if s is not None:
                values.append(s)
        reqs.append(api.Requirement(key, op, tuple(values)))
    return reqs


def _check_label_requirement(req: api.Requirement, path: str) -> list[fe.Problem]:
    """Upstream ``labels.NewRequirement`` checks (operator mapped from the node operator)."""
    if req.operator not in _LABEL_OPS:
        return [fe.not_supported(fe.join(path, "operator"), req.operator)]
    problems = []
    key_errs = fe.qualified_name_errors(req.key)
    if key_errs:
        problems.append(fe.invalid(fe.join(path, "key"), req.key, "; ".join(key_errs)))
    values_path = fe.join(path, "values")
    vals = list(req.values)
    if req.operator in ("In", "NotIn") and not vals:
        problems.append(
            fe.invalid(values_path, vals, "for 'in', 'notin' operators, values set can't be empty")
        )
    elif req.operator in ("Exists", "DoesNotExist") and vals:
        problems.append(
            fe.invalid(values_path, vals, "values set must be empty for exists and does not exist")
        )
    elif req.operator in ("Gt", "Lt"):
        if len(vals) != 1:
            problems.append(
                fe.invalid(
                    values_path, vals, "for 'Gt', 'Lt' operators, exactly one value is required"
                )
            )
        for i, v in enumerate(vals):
            if api.parse_int64(v) is None:
                problems.append(
                    fe.invalid(
                        fe.index(values_path, i),
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    for i, v in enumerate(vals):
        errs = fe.label_value_errors(v)
        if errs:
            problems.append(
                fe.invalid(f"{fe.index(values_path, i)}[{req.key}]", v, "; ".join(errs))
            )
    return problems


def _check_field_requirement(req: api.Requirement, path: str) -> list[fe.Problem]:
    """Upstream ``nodeSelectorRequirementsAsFieldSelector`` checks."""
    if req.operator not in _FIELD_OPS:
        return [fe.not_supported(fe.join(path, "operator"), req.operator, _FIELD_OPS)]
    if len(req.values) != 1:
        return [fe.invalid(fe.join(path, "values"), list(req.values), "must have one element")]
    return []


def _term(dec: Decoder, value: Any, path: str, check_path: str) -> api.NodeSelectorTerm:
    """Decode one NodeSelectorTerm at ``path``; validate it with paths under ``check_path``."""
    d = dec.obj(value, path, ("matchExpressions", "matchFields")) or {}
    exprs = _requirements(dec, d.get("matchExpressions"), fe.join(path, "matchExpressions"))
    fields = _requirements(dec, d.get("matchFields"), fe.join(path, "matchFields"))
    for i, r in enumerate(exprs):
        dec.problems.extend(
            _check_label_requirement(r, fe.index(fe.join(check_path, "matchExpressions"), i))
        )
    for i, r in enumerate(fields):
        dec.problems.extend(
            _check_field_requirement(r, fe.index(fe.join(check_path, "matchFields"), i))
        )
    return api.NodeSelectorTerm(tuple(exprs), tuple(fields))


def _quiet_term(dec: Decoder, value: Any, path: str) -> api.NodeSelectorTerm:
    """Decode a term without semantic validation (upstream skips it)."""
    d = dec.obj(value, path, ("matchExpressions", "matchFields")) or {}
    exprs = _requirements(dec, d.get("matchExpressions"), fe.join(path, "matchExpressions"))
    fields = _requirements(dec, d.get("matchFields"), fe.join(path, "matchFields"))
    return api.NodeSelectorTerm(tuple(exprs), tuple(fields))


def _is_empty(value: Any) -> bool:
    return not isinstance(value, dict) or not (
        value.get("matchExpressions") or value.get("matchFields")
    )


def parse_added_affinity(dec: Decoder, value: Any, path: str) -> api.NodeAffinity | None:
    """Decode and validate ``addedAffinity`` at ``path``; problems go to ``dec``."""
    d = dec.obj(value, path, (_REQUIRED, _PREFERRED))
    if d is None:
        return None
    required: tuple[api.NodeSelectorTerm, ...] | None = None
    req_path = fe.join(path, _REQUIRED)
    selector = dec.obj(d.get(_REQUIRED), req_path, ("nodeSelectorTerms",))
    if selector is not None:
        terms_path = fe.join(req_path, "nodeSelectorTerms")
        terms = []
        for i, term in enumerate(dec.lst(selector.get("nodeSelectorTerms"), terms_path)):
            p = fe.index(terms_path, i)
            terms.append(_quiet_term(dec, term, p) if _is_empty(term) else _term(dec, term, p, p))
        required = tuple(terms)
    preferred = []
    pref_path = fe.join(path, _PREFERRED)
    for i, item in enumerate(dec.lst(d.get(_PREFERRED), pref_path)):
        p = fe.index(pref_path, i)
        entry = dec.obj(item, p, ("weight", "preference")) or {}
        weight = dec.integer(entry.get("weight"), fe.join(p, "weight")) or 0
        pref = entry.get("preference")
        if weight == 0 or _is_empty(pref):
            term = _quiet_term(dec, pref, fe.join(p, "preference"))
        else:
            term = _term(dec, pref, fe.join(p, "preference"), p)
        preferred.append(api.PreferredSchedulingTerm(weight, term))
    return api.NodeAffinity(required=required, preferred=tuple(preferred))
