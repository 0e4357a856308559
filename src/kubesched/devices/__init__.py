"""devices room: the device model, fragmentation and placement kernels the device plugins share.

Plugins never import each other, so what several device plugins (the GPU plugins,
DynamicResources) and the trace replay and report need lives here, one layer above
``framework`` (whose contract some of it uses) and below ``plugins``:

- :mod:`~kubesched.devices.fragmentation`: the FGD paper's fragmentation measure over a
  target workload, vectorised;
- :mod:`~kubesched.devices.policies`: every GPU placement policy as a numpy kernel;
- :mod:`~kubesched.devices.gpuview`: a Pod's GPU request, the candidate nodes' GPU columns and
  the learned target workload, as the GPU plugins see them;
- :mod:`~kubesched.devices.koordinator`: GPU topology from Koordinator ``Device`` objects;
- :mod:`~kubesched.devices.measures`: fragmentation %, idle whole-GPU nodes and the other
  placement measures exported as metrics.

The per-node GPU columns themselves stay in :mod:`kubesched.state.gpus` (the cache keeps them
in step with every Pod it accounts).  See docs/design.md section 4 and docs/architecture.md.
"""
