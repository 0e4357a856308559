"""Live mode: schedule the Pods of a real cluster through the official Kubernetes client.

``client`` (the only module that imports ``kubernetes``) talks to the API server;
``informer`` lists and watches; ``dispatch`` feeds the deltas to the same
:class:`~kubesched.scheduler.Scheduler` the simulator drives; ``binder`` binds and reports;
``recorder`` writes Events and conditions in the background; ``leader`` holds the Lease;
``health`` serves ``/metrics``, ``/healthz`` and ``/readyz``; ``runner`` is the loop.
The sharded form (shards as separate processes) waits for ``kubesched.parallel``.
"""
