"""The framework room: the plugin contract and the runtime that runs a profile's plugins.

The contract (:mod:`~kubesched.framework.interface`, :mod:`~kubesched.framework.contract`,
:mod:`~kubesched.framework.clusterevents`, :mod:`~kubesched.framework.events`,
:mod:`~kubesched.framework.outcomes`): extension points answering for all candidate nodes at
once (int8 codes per node for Filter, int64 scores per node for Score), one Protocol per
extension point and per kubesched capability with its invariant, the typed Handle, Status
codes, cluster events for queueing hints, what preemption may ask of the HTTP extenders;
checked by :mod:`~kubesched.framework.conformance`.  The runtime
(:mod:`~kubesched.framework.runtime`, :mod:`~kubesched.framework.filterphase`,
:mod:`~kubesched.framework.nominated`, :mod:`~kubesched.framework.sampling`): one profile's
plugins over the node columns, with upstream's ``percentageOfNodesToScore``, nominated Pods
counted in Filter, and the timed twin of sampled cycles.

Nothing else lives here: the array kernels plugins share are in ``kernels``, result reuse
and the HTTP extenders in ``scheduler``, which uses them.

Imports ``kernels``, ``state``, ``config``, ``metrics`` and ``api``; never ``plugins`` or above.
"""
