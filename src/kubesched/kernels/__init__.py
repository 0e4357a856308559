"""kernels room: array kernels over the node columns that plugins, the runtime and the
explainer share, with no plugin contract in them.

Plugins never import each other, so what two of them compute alike lives here, one layer
below ``framework`` so that its runtime can use the same kernels:

- :mod:`~kubesched.kernels.resources`: resource arithmetic of the resource plugins
  (NodeResourcesFit, BalancedAllocation) and the explainer's capacity answer: requested and
  allocatable columns, the scoring strategies, vectorised;
- :mod:`~kubesched.kernels.usage`: Pod usage moved on and off node rows in bulk (the
  runtime's nominated Pods in Filter, preemption's dry runs).

Device kernels (GPU, DRA, fragmentation) have their own room, ``devices``, above
``framework`` because they use its contract.

Imports ``api``, ``config``, ``metrics`` and ``state``; never ``framework`` or above.
See docs/design.md section 4 and docs/architecture.md.
"""
