"""NodeAffinity: ``spec.nodeSelector`` and node affinity (PreFilter, Filter, PreScore, Score).

Upstream ``nodeaffinity/node_affinity.go`` with ``component-helpers/.../nodeaffinity`` (v1.34,
QueueingHints enabled):

- required: ``nodeSelector`` (exact label equality) AND the ORed ``nodeSelectorTerms``; an
  empty term matches nothing, a term with an invalid requirement matches nothing (upstream's
  lazy parse errors, ignored by Filter), zero terms match nothing.  Failing nodes get
  UnschedulableAndUnresolvable ``node(s) didn't match Pod's node affinity/selector``; the
  profile's ``addedAffinity`` is checked first with ``... scheduler-enforced node affinity``.
- PreFilter narrows to node names when every term has ``matchFields metadata.name In``.
- Score: the sum of the weights of matching preferred terms (the Pod's plus addedAffinity's),
  normalized with ``DefaultNormalizeScore`` (not reversed).

Requirements compile once per Pod (PreFilter / PreScore, kept in CycleState) and evaluate over
``rows`` with the node table's interned label codes; Gt/Lt compare per distinct label value.
Deviation: an empty ``preferred`` list is treated as absent (PreScore skips; same result).
"""

from kubesched.plugins.nodeaffinity.plugin import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NAME,
    NodeAffinity,
    new,
)
from kubesched.plugins.nodeaffinity.selectors import OBJECT_NAME_FIELD, match_node_selector_terms

__all__ = [
    "ERR_REASON_CONFLICT",
    "ERR_REASON_ENFORCED",
    "ERR_REASON_POD",
    "NAME",
    "OBJECT_NAME_FIELD",
    "NodeAffinity",
    "match_node_selector_terms",
    "new",
]
