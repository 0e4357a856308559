"""DefaultPreemption: the PostFilter that preempts lower-priority Pods (upstream v1.34).

When no node fits a Pod, pick nodes where evicting lower-priority Pods would make it fit,
choose the best one and delete its victims; the Pod is *nominated* to that node, and
nominated Pods count during later Filters (the runtime's ``run_filter_with_nominated``), so
the room is kept for it.

- :mod:`.plugin`: the plugin, its args (``minCandidateNodesPercentage`` 10,
  ``minCandidateNodesAbsolute`` 100), eligibility (``preemptionPolicy: Never``, victims still
  terminating on the nominated node) and the FitError message of a failed preemption;
- :mod:`.dryrun`: candidate nodes from a random offset and minimal victim sets, vectorised
  over nodes (the victims' usage is lifted from the node table and restored exactly), or
  node by node with PreFilterExtensions (RemovePod / AddPod) when inter-pod affinity or
  topology spread hold state this cycle; each node's result kept for the next equivalent
  preemptor until the node's Pods, Node or nominated Pods change (``KeptResults``);
- :mod:`.pdb`: PodDisruptionBudgets (PDB-violating victims are reprieved first);
- :mod:`.picking`: upstream's node-picking criteria in order.

Deviations from upstream: preemption runs synchronously inside the cycle (victims are
deleted through the API client at once; upstream v1.34 deletes them asynchronously and gates
the Pod meanwhile, which the simulator's immediate deletions make equivalent); extenders
with a ``preemptVerb`` (``handle.extenders``) filter the candidates as upstream's
``callExtenders``, the candidates they keep staying in search order (upstream: Go map
order); the default ``IsEligiblePod`` / ``MoreImportantPod`` only; candidates are searched
in node order from the offset (upstream's parallel search with parallelism 1); PDBs without
``status`` are derived from their spec (see :mod:`.pdb`).
"""

from kubesched.plugins.defaultpreemption.plugin import (
    NAME,
    DefaultPreemption,
    DefaultPreemptionArgs,
    new,
)

__all__ = ["NAME", "DefaultPreemption", "DefaultPreemptionArgs", "new"]
