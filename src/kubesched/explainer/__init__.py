"""explainer room: ``kubesched.explain``, why a Pod is Pending and why it goes where it goes.

- :mod:`~kubesched.explainer.cycle`: one scheduling cycle on every node (verdicts, reasons,
  scores, the node picked); the answer's shape is docs/design.md section 5;
- :mod:`~kubesched.explainer.capacity`: for an Unschedulable Pod, whether the cluster is short
  of what the Pod asks or has enough free in total but fragmented (the ``capacity`` object);
- :mod:`~kubesched.explainer.devicefit`: per node, which DRA device request cannot be
  satisfied and why.

Imports ``scheduler`` (its search, result types and HTTP extenders) and every room below it;
never ``parallel`` or above.
"""

from kubesched.explainer.cycle import build_cluster, explain

__all__ = ["build_cluster", "explain"]
