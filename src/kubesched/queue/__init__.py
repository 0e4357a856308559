"""The queue room: upstream's scheduling queue.

activeQ, backoffQ and the unschedulable pool (:mod:`~kubesched.queue.scheduling_queue`,
:mod:`~kubesched.queue.heaps`, :mod:`~kubesched.queue.backoff`,
:mod:`~kubesched.queue.unschedulable`), gated Pods, queueing hints deciding which cluster events
requeue which Pods (:mod:`~kubesched.queue.hints`, :mod:`~kubesched.queue.events`), in-flight
events (:mod:`~kubesched.queue.inflight`), the nominator (:mod:`~kubesched.queue.nominator`) and
the periodic flushes every driver runs through ``SchedulingQueue.due`` / ``next_wakeup``
(:mod:`~kubesched.queue.periodic`).

Imports the rooms below it (``plugins`` and down); knows nothing of any driver's clock.
"""
