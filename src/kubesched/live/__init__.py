"""Live mode: schedule the Pods of a real cluster through the official Kubernetes client.

``client`` (the only module that imports ``kubernetes``) talks to the API server;
``informer`` lists and watches; ``dispatch`` feeds the deltas to the same
:class:`~kubesched.scheduler.Scheduler` the simulator drives; ``binder`` binds and reports;
``recorder`` writes Events and conditions in the background; ``leader`` holds the Lease;
``health`` serves ``/metrics``, ``/healthz`` and ``/readyz``; ``runner`` is the loop.
The sharded form (``docs/parallel.md`` §6) is :mod:`kubesched.parallel`'s design over a
live transport: ``sharding`` is what coordinator and shards write on Pods (the shard's
answer, :data:`kubesched.parallel.protocol.Result`, as an annotation) and which shards are
alive; ``coordinator`` hands Pods out through the in-process dispatcher (its courier: the
annotation patch) and ``decisions`` decides the answers with the binder's checks, outcomes
and gang decision (``parallel/conflicts.py``, ``parallel/gangs.py``); ``shard`` runs the in-process
shard's scheduler and writes its answers; ``roles`` builds the replica of a role.
"""
