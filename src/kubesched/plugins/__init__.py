"""The plugins room: one module (or package) per plugin name.

Upstream's (PrioritySort, SchedulingGates, NodeUnschedulable, NodeName, TaintToleration,
NodeAffinity, NodePorts, NodeResourcesFit, NodeResourcesBalancedAllocation, ImageLocality,
PodTopologySpread, InterPodAffinity, DynamicResources, DefaultPreemption, DefaultBinder) with
their names, formulas and reason strings, and kubesched's own (Coscheduling,
CapacityScheduling, the GPU placement policies, DeviceFragmentation).  The registry
(:mod:`~kubesched.plugins.registry`) builds a profile's plugins; out-of-tree plugins register
through the ``kubesched.plugins`` entry-point group (:mod:`~kubesched.plugins.entrypoints`).
:mod:`~kubesched.plugins.typecheck` has mypy check every in-tree plugin class against the
Protocols of the plugin contract it implements.

Plugins never import each other (an import-linter contract): what several share lives in
``devices`` (device models and kernels), ``kernels`` (resource arithmetic, Pod usage on node
rows) or ``framework`` (the contract).  Imports ``api``, ``config``, ``metrics``, ``state``,
``kernels``, ``framework``, ``admission`` and ``devices``.
"""
