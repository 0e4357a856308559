"""Who may enter the queue: the job layer above the scheduler.

- :mod:`~kubesched.admission.objects`: PodGroup, ElasticQuota, ClusterQueue, LocalQueue and
  ResourceFlavor parsed from their manifests, and the labels that tie Pods to them;
- :mod:`~kubesched.admission.references`: bad input (dangling references, quota cycles,
  children's min above the parent's) as one :class:`~kubesched.api.errors.InputError`;
- :mod:`~kubesched.admission.waterfill` and :mod:`~kubesched.admission.quota`: the elastic
  quota tree with weighted water-filling (used by the CapacityScheduling plugin);
- :mod:`~kubesched.admission.kueue`: Kueue-style admission of whole workloads against
  ClusterQueue quota with cohorts, borrowing and lending limits (driven by a controller);
- :mod:`~kubesched.admission.gang`: gang (PodGroup) lifecycle bookkeeping.

This room sits beside ``framework`` and imports only ``api``, ``config`` and ``state``.
"""
