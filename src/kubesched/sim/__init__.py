"""The sim room: the offline world in virtual time.

The event loop (and the wall clock bench runs in), the in-process API server with graceful
deletion that bench runs on too, and the driver (:mod:`~kubesched.sim.engine`,
:mod:`~kubesched.sim.apiserver`, :mod:`~kubesched.sim.driver`),
scenarios and their limits (:mod:`~kubesched.sim.scenario`,
:mod:`~kubesched.sim.scenario_fields`), the controllers a real cluster runs beside the scheduler
(jobs, admission, the resourceclaim controller), node-side startup, fault drills, retry
governance compared, upstream's speed as a calibrated cost model
(:mod:`~kubesched.sim.costmodel`), the what-if (:mod:`~kubesched.sim.whatif`:
``kubesched.schedule``), the GPU trace replay, and :mod:`~kubesched.sim.simulate`, which runs a
scenario and checks the invariants of docs/design.md section 7.

Imports ``parallel`` and every room below it; never ``live``.
"""
