"""PreFilter and Filter of InterPodAffinity (upstream ``interpodaffinity/filtering.go``).

PreFilter reads the counts the :class:`~.index.AffinityIndex` keeps current and turns them,
per topology key, into a small verdict table: the code of the first check a node in each
domain fails (0 when it passes them all).  Filter is then one gather per key with the
candidate rows' label codes (the smallest non-zero code over the keys wins, as upstream
stops at the first failing check).  Upstream's three checks, in its order, with their codes:

1. the incoming Pod's required affinity: every term's topology key must be on the node, and
   the node's domain must hold a Pod matching *all* the terms, unless no Pod anywhere matches
   them all and the Pod matches its own terms (the first Pod of a group):
   UnschedulableAndUnresolvable ``node(s) didn't match pod affinity rules``;
2. the incoming Pod's required anti-affinity: no term may have a matching Pod in the node's
   domain: Unschedulable ``node(s) didn't match pod anti-affinity rules``;
3. existing Pods' required anti-affinity: no existing Pod whose term matches the incoming Pod
   may sit in the node's domain for that term's key: Unschedulable
   ``node(s) didn't satisfy existing pods anti-affinity rules``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.framework.interface import CodeArray, IntArray
from kubesched.plugins.interpodaffinity.index import REQUIRED_ANTI, AffinityIndex
from kubesched.plugins.interpodaffinity.terms import PodTerms, matcher
from kubesched.state.nodes import NodeTable

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

AFFINITY_CODE = 1
ANTI_AFFINITY_CODE = 2
EXISTING_ANTI_AFFINITY_CODE = 3


@dataclass(slots=True)
class PreFilterState:
    """What Filter needs: ``verdicts[key]`` is an int8 array indexed by the value code of node
    label ``key`` (the last slot for nodes without the label) holding the first failing
    check's code for nodes in that domain, 0 when they pass every check on that key."""

    verdicts: dict[str, CodeArray] = field(default_factory=dict)


def _mark(state: PreFilterState, key: str, fails: npt.NDArray[np.bool_], code: int) -> None:
    """Domains where ``fails`` get ``code`` unless an earlier check failed there (checks are
    marked in upstream's order, so an earlier failure has the smaller code)."""
    t = state.verdicts.get(key)
    if t is None:
        state.verdicts[key] = np.multiply(fails, code, dtype=np.int8)
    else:
        np.copyto(t, np.int8(code), where=fails & (t == 0))


def _accumulate(acc: dict[str, IntArray], key: str, dom: IntArray) -> None:
    cur = acc.get(key)
    acc[key] = dom if cur is None else cur + dom


def existing_anti_domains(
    index: AffinityIndex, pod: api.Pod, ns_labels: dict[str, str]
) -> dict[str, IntArray]:
    """Per topology key, how many existing Pods whose required anti-affinity terms match
    ``pod`` sit in each domain (upstream ``getExistingAntiAffinityCounts``)."""
    acc: dict[str, IntArray] = {}
    table = index.table
    for (_, term), counts in index.groups[REQUIRED_ANTI].items():
        if counts.total and term.matches(pod.namespace, pod.labels, ns_labels):
            _accumulate(acc, term.topology_key, counts.domain(term.topology_key, table))
    return acc


def pre_filter_state(
    index: AffinityIndex,
    pod: api.Pod,
    terms: PodTerms,
    namespaces: Mapping[str, dict[str, str]],
) -> PreFilterState | None:
    """The state for Filter, or None when upstream's PreFilter returns Skip (no required
    term and no existing Pod's anti-affinity matching the Pod on a labelled node)."""
    existing = existing_anti_domains(index, pod, namespaces.get(pod.namespace, {}))
    existing = {k: d for k, d in existing.items() if np.count_nonzero(d)}
    if not existing and not terms.required_affinity and not terms.required_anti:
        return None
    state = PreFilterState()
    table = index.table
    pod_ns = index.pod_namespaces
    if terms.required_affinity:
        matchers = tuple(matcher(t, namespaces, pod_ns) for t in terms.required_affinity)
        counts = index.counter(matchers)
        doms = [
            (t.topology_key, counts.domain(t.topology_key, table)) for t in terms.required_affinity
        ]
        nothing = not any(np.count_nonzero(d) for _, d in doms)
        first_pod = nothing and all(m.matches(pod.namespace, pod.labels) for m in matchers)
        for key, dom in doms:
            # The domain must hold a matching Pod (the missing-label slot never does), or for
            # the first Pod of a group only the label must be there.
            if first_pod:
                fails = np.zeros(dom.shape[0], dtype=np.bool_)
                fails[-1] = True
            else:
                fails = dom == 0
            _mark(state, key, fails, AFFINITY_CODE)
    if terms.required_anti:
        acc: dict[str, IntArray] = {}
        for t in terms.required_anti:
            counts = index.counter((matcher(t, namespaces, pod_ns),))
            _accumulate(acc, t.topology_key, counts.domain(t.topology_key, table))
        for key, dom in acc.items():
            if np.count_nonzero(dom):
                _mark(state, key, dom > 0, ANTI_AFFINITY_CODE)
    for key, dom in existing.items():
        _mark(state, key, dom > 0, EXISTING_ANTI_AFFINITY_CODE)
    return state


def _codes(table: NodeTable, key: str, rows: IntArray) -> npt.NDArray[np.int32]:
    col = table.label_codes.get(key)
    if col is None:
        return np.full(rows.shape[0], -1, dtype=np.int32)
    return col[rows]


def filter_codes(
    state: PreFilterState, table: NodeTable, rows: IntArray
) -> tuple[CodeArray, list[int]]:
    """int8 ``(n,)``: 0 where ``rows[i]`` passes, else the first failing check's code; and
    the codes that occur."""
    out: CodeArray | None = None
    for key, verdict in state.verdicts.items():
        codes = verdict[_codes(table, key, rows)]
        if out is None:
            out = codes
        else:  # the smallest non-zero code: 0 becomes 127 for np.minimum, then back
            out = np.minimum(np.where(out == 0, 127, out), np.where(codes == 0, 127, codes))
            out[out == 127] = 0
    if out is None:
        return np.zeros(rows.shape[0], dtype=np.int8), []
    counts = np.bincount(out, minlength=EXISTING_ANTI_AFFINITY_CODE + 1)
    return out, [k for k in range(1, counts.shape[0]) if counts[k]]
