"""PodTopologySpread: spread Pods across topology domains (PreFilter, Filter, PreScore, Score).

Upstream ``pkg/scheduler/framework/plugins/podtopologyspread`` (v1.34, QueueingHints enabled,
minDomains, nodeAffinityPolicy/nodeTaintsPolicy and matchLabelKeys all on):

- hard constraints (``whenUnsatisfiable: DoNotSchedule``) filter nodes whose domain would
  exceed ``maxSkew`` over the global minimum (0 while fewer than ``minDomains`` domains),
  reasons ``node(s) didn't match pod topology spread constraints`` (Unschedulable) and
  ``... (missing required label)`` (UnschedulableAndUnresolvable);
- soft constraints (``ScheduleAnyway``) score nodes by weighted matching counts, normalised
  so the least crowded node scores 100;
- a Pod without constraints gets the default constraints (``defaultingType: System``:
  hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway; ``List``: the configured
  ``defaultConstraints``) with a selector deduced from the Services selecting it.

Speed: counts of matching Pods per node row are maintained incrementally by a cache observer
(:mod:`.counts`), per-domain counts are one ``bincount`` per constraint, and Filter/Score are
vectorised over the candidate rows.

PreFilterExtensions (AddPod / RemovePod, used by preemption's dry runs and the nominated-Pod
pass) update the cycle's counts for one node's domains (:func:`.filtering.with_pod`).

Deviations: terminating Pods are not modelled (every accounted Pod counts); default selectors
ignore ReplicaSets, StatefulSets and ReplicationControllers (not modelled), using Services
only.
"""

from kubesched.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from kubesched.plugins.podtopologyspread.plugin import NAME, PodTopologySpread, new

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "NAME",
    "PodTopologySpread",
    "new",
]
