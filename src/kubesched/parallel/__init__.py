"""Parallel scheduling: independent node pools, and one shared pool scheduled by N shards.

- :mod:`~kubesched.parallel.pools`: several schedulers, each with its own ``schedulerName``,
  election lock and node pool; :func:`~kubesched.parallel.pools.check_pools` reports Pods
  bound outside their scheduler's pool and nodes two schedulers can reach.
- The shared pool with optimistic concurrency: a dispatcher
  (:mod:`~kubesched.parallel.dispatcher`) owning the queue, N shard processes
  (:mod:`~kubesched.parallel.shard`) each running the normal scheduler on a replica, and a
  conflict-checking binder (:mod:`~kubesched.parallel.binder`) holding the authoritative
  state (its fast check in :mod:`~kubesched.parallel.fastpath`, its bulk commit in
  :mod:`~kubesched.parallel.bulk`), wired together by
  :class:`~kubesched.parallel.coordinator.ParallelScheduler`; a shard process runs
  :func:`~kubesched.parallel.shardmain.serve`.  The binder and its helpers depend on the
  Protocols of :mod:`~kubesched.parallel.host`, not on the coordinator, so the room imports
  as a tree (``tests/test_import_graph.py``).
- The one home of sharding, offline and live: the shard's messages
  (:mod:`~kubesched.parallel.protocol`), the shard (:mod:`~kubesched.parallel.shard`), the
  checks (:class:`~kubesched.parallel.binder.Checker`), the outcomes of a checked answer
  (:class:`~kubesched.parallel.conflicts.Outcomes`, over the narrow
  :class:`~kubesched.parallel.host.OutcomeHost`), the gang decision
  (:func:`~kubesched.parallel.gangs.commit_unit`, over
  :class:`~kubesched.parallel.gangs.GangDecisions`) and the hand-out (the
  :class:`~kubesched.parallel.dispatcher.Dispatcher`: choice of shard, gang index, records;
  its transport a :class:`~kubesched.parallel.dispatcher.Courier`) are used as they are by
  :mod:`kubesched.live`, which adds only the live transport (annotations, Leases, API writes).
  :func:`~kubesched.parallel.factory.make_scheduler` is how ``bench`` and ``simulate`` get a
  serial (``shards=1``) or parallel scheduler.  See ``docs/parallel.md``.
"""
