"""Pod (anti-)affinity terms compiled once per Pod (upstream ``framework.PodInfo``).

Upstream turns every ``PodAffinityTerm`` into an ``AffinityTerm``: the label selector parsed,
``namespaces`` defaulted to the Pod's own namespace when both it and ``namespaceSelector`` are
empty, and ``namespaceSelector`` kept (``nil`` matches nothing, ``{}`` matches every
namespace).  ``matchLabelKeys`` / ``mismatchLabelKeys`` are merged into the selector from the
Pod's own labels (``key In (value)`` / ``key NotIn (value)``, keys the Pod lacks ignored, a nil
selector left nil), as the API server does when a Pod is created; merging again a selector the
API server already merged adds duplicate requirements and changes nothing.

For the incoming Pod, upstream then resolves ``namespaceSelector`` into the set of namespaces
whose labels match (``mergeAffinityTermNamespacesIfNotEmpty``); :func:`matcher` does that into
a :class:`Matcher`, the hashable key under which matching-Pod counts are kept.  Namespaces are
those declared in ``cluster.namespaces.labels`` plus any namespace that holds a Pod (an
undeclared namespace is treated as existing with no labels, as it would in a real cluster).

Selector values and keys are validated as ``labels.NewRequirement`` does; an invalid one is
the Pod's parse error (``values[0][key]: Invalid value: ...``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.api import objects as api

_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _hashed(obj: object, fields: tuple[object, ...]) -> None:
    """Keep the hash of a frozen term's fields on it.

    Terms and matchers key the index's dicts (groups, resolved matchers, counters) and are
    looked up several times per Pod; the generated hash walked the selectors' nested tuples
    each time.  String hashes differ between processes, so the kept hash is never pickled.
    """
    object.__setattr__(obj, "_hash", hash(fields))


@dataclass(frozen=True, slots=True)
class Term:
    """A processed ``PodAffinityTerm`` (upstream ``AffinityTerm``).

    ``selector`` None matches no Pod; ``ns_selector`` None matches no namespace, an empty
    selector every namespace.
    """

    topology_key: str
    selector: api.LabelSelector | None
    namespaces: frozenset[str]
    ns_selector: api.LabelSelector | None
    _hash: int = field(init=False, repr=False, compare=False)
    """The fields' hash, computed once (:func:`_hashed`)."""

    def __post_init__(self) -> None:
        _hashed(self, (self.topology_key, self.selector, self.namespaces, self.ns_selector))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[Term], tuple[object, ...]]:
        """Pickle as ``Term(*fields)``: the hash is computed again where it is loaded."""
        return Term, (self.topology_key, self.selector, self.namespaces, self.ns_selector)

    def matches(self, namespace: str, labels: dict[str, str], ns_labels: Mapping[str, str]) -> bool:
        """Upstream ``AffinityTerm.Matches``: namespace (listed, or its labels selected) and
        labels selected.  ``ns_labels`` are the labels of ``namespace``."""
        if namespace in self.namespaces or (
            self.ns_selector is not None and self.ns_selector.matches(ns_labels)
        ):
            return self.selector is not None and self.selector.matches(labels)
        return False


@dataclass(frozen=True, slots=True)
class Matcher:
    """An incoming Pod's term with its namespace selector resolved: which Pods it selects.

    ``all_namespaces`` when the selector was ``{}``; otherwise ``namespaces`` is complete.
    """

    all_namespaces: bool
    namespaces: frozenset[str]
    selector: api.LabelSelector | None
    _hash: int = field(init=False, repr=False, compare=False)
    """The fields' hash, computed once (:func:`_hashed`)."""

    def __post_init__(self) -> None:
        _hashed(self, (self.all_namespaces, self.namespaces, self.selector))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[Matcher], tuple[object, ...]]:
        """Pickle as ``Matcher(*fields)``: the hash is computed again where it is loaded."""
        return Matcher, (self.all_namespaces, self.namespaces, self.selector)

    def matches(self, namespace: str, labels: dict[str, str]) -> bool:
        """Whether a Pod in ``namespace`` with ``labels`` is selected."""
        if not (self.all_namespaces or namespace in self.namespaces):
            return False
        return self.selector is not None and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class PodTerms:
    """A Pod's four kinds of terms; ``error`` is upstream's PodInfo parse error, if any."""

    required_affinity: tuple[Term, ...] = ()
    required_anti: tuple[Term, ...] = ()
    preferred_affinity: tuple[tuple[int, Term], ...] = ()
    preferred_anti: tuple[tuple[int, Term], ...] = ()
    error: str = ""

    def empty(self) -> bool:
        """No term at all."""
        return not (
            self.required_affinity
            or self.required_anti
            or self.preferred_affinity
            or self.preferred_anti
        )


NO_TERMS = PodTerms()


def merged_selector(
    term: api.PodAffinityTerm, labels: Mapping[str, str]
) -> api.LabelSelector | None:
    """The term's selector with ``matchLabelKeys`` / ``mismatchLabelKeys`` merged in."""
    sel = term.label_selector
    if sel is None or not (term.match_label_keys or term.mismatch_label_keys):
        return sel
    extra = [
        api.Requirement(k, "In", (labels[k],)) for k in term.match_label_keys if k in labels
    ] + [api.Requirement(k, "NotIn", (labels[k],)) for k in term.mismatch_label_keys if k in labels]
    if not extra:
        return sel
    return api.LabelSelector(sel.match_labels, (*sel.match_expressions, *extra))


@functools.lru_cache(maxsize=4096)
def selector_error(sel: api.LabelSelector | None) -> str:
    """The first problem ``metav1.LabelSelectorAsSelector`` would report ('' when valid);
    memoised, as many Pods share their selectors."""
    if sel is None:
        return ""
    reqs = [api.Requirement(k, "In", (v,)) for k, v in sel.match_labels]
    for r in (*reqs, *sel.match_expressions):
        prefix, slash, name = r.key.rpartition("/")
        bad_prefix = slash and not (0 < len(prefix) <= 253 and _DNS_RE.match(prefix))
        if bad_prefix or len(name) > 63 or not _NAME_RE.match(name):
            return f'key: Invalid value: "{r.key}": {_NAME_MSG}'
        for i, v in enumerate(r.values):
            if r.operator in ("Gt", "Lt"):
                continue
            if len(v) > 63:
                return (
                    f'values[{i}][{r.key}]: Invalid value: "{v}": '
                    "must be no more than 63 characters"
                )
            if not _VALUE_RE.match(v):
                return f'values[{i}][{r.key}]: Invalid value: "{v}": {_VALUE_MSG}'
    return ""


def compile_term(pod: api.Pod, term: api.PodAffinityTerm) -> tuple[Term, str]:
    """One term of ``pod`` and its parse error ('' if none)."""
    sel = merged_selector(term, pod.labels)
    err = selector_error(sel) or selector_error(term.namespace_selector)
    if term.namespaces or term.namespace_selector is not None:
        namespaces = frozenset(term.namespaces)
    else:
        namespaces = frozenset((pod.namespace,))
    return Term(term.topology_key, sel, namespaces, term.namespace_selector), err


def _required(
    pod: api.Pod, aff: api.PodAffinity | None, errs: list[str], what: str
) -> tuple[Term, ...]:
    out = []
    for t in aff.required if aff is not None else ():
        term, err = compile_term(pod, t)
        if err:
            errs.append(f"{what}: {err}")
            return ()
        out.append(term)
    return tuple(out)


def _preferred(
    pod: api.Pod, aff: api.PodAffinity | None, errs: list[str], what: str
) -> tuple[tuple[int, Term], ...]:
    out = []
    for w in aff.preferred if aff is not None else ():
        term, err = compile_term(pod, w.term)
        if err:
            errs.append(f"{what}: {err}")
            return ()
        out.append((w.weight, term))
    return tuple(out)


_Seen = tuple[object, object, dict[str, str] | None, PodTerms]
_seen: dict[tuple[str, int, int], _Seen] = {}
"""``(namespace, id(affinity), id(anti-affinity))`` -> the affinity objects, the labels (None
when no term has ``matchLabelKeys`` / ``mismatchLabelKeys``: the terms do not read them)
and the terms compiled from them (the objects are kept, so an id is not reused while its
entry lives; a hit needs the same objects and, when kept, equal labels).  Pods made from
one template share their affinity objects, so they share one answer: the same
:class:`Term` objects, which the index's dicts then find by identity."""
_SEEN_MAX = 1 << 14
"""Entries kept before the cache starts again (a burst of Pods with terms, each seen once)."""


def pod_terms(pod: api.Pod) -> PodTerms:
    """Upstream ``NewPodInfo``'s terms; errors aggregated as ``utilerrors.NewAggregate``.

    The answer is kept per (affinity objects, namespace, labels if a term reads them), the
    only inputs: one scheduling cycle asks in PreFilter, PreScore and when the Pod is
    assumed, the queue's hint for an assigned Pod's add asks for every pooled Pod with terms
    (EventHandlingPodAdd: 2,000 pooled Pods, one bound Pod at a time), and the Pods of one
    template (shallow copies sharing the affinity objects, their labels differing by the
    benchmark's signature label) compile their terms once.
    """
    aff, anti = pod.pod_affinity, pod.pod_anti_affinity
    if aff is None and anti is None:
        return NO_TERMS
    key = (pod.namespace, id(aff), id(anti))
    seen = _seen.get(key)
    if (
        seen is not None
        and seen[0] is aff
        and seen[1] is anti
        and (seen[2] is None or seen[2] == pod.labels)
    ):
        return seen[3]
    terms = _compile(pod, aff, anti)
    if len(_seen) >= _SEEN_MAX:
        _seen.clear()
    _seen[key] = (aff, anti, dict(pod.labels) if _reads_labels(aff, anti) else None, terms)
    return terms


def _reads_labels(*affinities: api.PodAffinity | None) -> bool:
    """Whether any term merges the Pod's labels (``matchLabelKeys`` / ``mismatchLabelKeys``)."""
    return any(
        t.match_label_keys or t.mismatch_label_keys
        for aff in affinities
        if aff is not None
        for t in (*aff.required, *(w.term for w in aff.preferred))
    )


def _compile(pod: api.Pod, aff: api.PodAffinity | None, anti: api.PodAffinity | None) -> PodTerms:
    errs: list[str] = []
    info = PodTerms(
        _required(pod, aff, errs, "requiredAffinityTerms"),
        _required(pod, anti, errs, "requiredAntiAffinityTerms"),
        _preferred(pod, aff, errs, "preferredAffinityTerms"),
        _preferred(pod, anti, errs, "preferredAntiAffinityTerms"),
    )
    if not errs:
        return info
    message = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
    return PodTerms(
        info.required_affinity,
        info.required_anti,
        info.preferred_affinity,
        info.preferred_anti,
        message,
    )


def matcher(
    term: Term, ns_labels: Mapping[str, Mapping[str, str]], pod_namespaces: Iterable[str]
) -> Matcher:
    """``term`` of an incoming Pod with ``namespaceSelector`` resolved into namespaces.

    ``ns_labels``: declared namespaces' labels; ``pod_namespaces``: namespaces holding Pods.
    """
    sel = term.ns_selector
    if sel is None:
        return Matcher(False, term.namespaces, term.selector)
    if not sel.match_labels and not sel.match_expressions:
        return Matcher(True, term.namespaces, term.selector)
    names = set(term.namespaces)
    for ns in {*ns_labels, *pod_namespaces}:
        if sel.matches(ns_labels.get(ns, {})):
            names.add(ns)
    return Matcher(False, frozenset(names), term.selector)
