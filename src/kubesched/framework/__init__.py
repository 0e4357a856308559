"""The framework room: the plugin contract and the runtime that runs a profile's plugins.

The contract (:mod:`~kubesched.framework.interface`, :mod:`~kubesched.framework.contract`,
:mod:`~kubesched.framework.clusterevents`, :mod:`~kubesched.framework.outcomes`): extension
points answering for all candidate nodes at once (int8 codes per node for Filter, int64 scores
per node for Score), one Protocol per extension point and per kubesched capability with its
invariant, the typed Handle, Status codes, cluster events for queueing hints; checked by
:mod:`~kubesched.framework.conformance`.  The runtime (:mod:`~kubesched.framework.runtime`,
:mod:`~kubesched.framework.filterphase`, :mod:`~kubesched.framework.sampling`): one profile's
plugins over the node columns, with upstream's ``percentageOfNodesToScore``.  Beside them: result
reuse across equivalent Pods (:mod:`~kubesched.scheduler.batch`), kept static failures
(:mod:`~kubesched.scheduler.verdicts`), nominated Pods and HTTP extenders.

Imports ``api``, ``config``, ``metrics`` and ``state``; never ``plugins`` or above.
"""
