"""Live mode: schedule the Pods of a real cluster through the official Kubernetes client.

``client`` (the only module that imports ``kubernetes``) talks to the API server;
``informer`` lists and watches; ``dispatch`` feeds the deltas to the same
:class:`~kubesched.scheduler.Scheduler` the simulator drives; ``binder`` binds and reports;
``recorder`` writes Events and conditions in the background; ``leader`` holds the Lease;
``health`` serves ``/metrics``, ``/healthz`` and ``/readyz``; ``runner`` is the loop.
The sharded form (``docs/parallel.md`` §6): ``sharding`` is what coordinator and shards
write on Pods and which shards are alive; ``coordinator`` and ``decisions`` hand Pods out,
re-validate and bind; ``shard`` proposes; ``roles`` builds the replica of a role.
"""
