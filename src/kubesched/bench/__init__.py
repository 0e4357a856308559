"""The benchmark harness: upstream scheduler_perf test cases run against the real scheduler.

- :mod:`~kubesched.bench.config`: the YAML format (test cases, workloads, ops), validated with
  error paths that name the test case, the op index and the field;
- :mod:`~kubesched.bench.params`: ``$param`` resolution per workload and label filtering;
- :mod:`~kubesched.bench.gotemplate`: the Go text/template subset the templates use;
- :mod:`~kubesched.bench.objects`: Nodes, Pods and other objects made from templates;
- :mod:`~kubesched.bench.api`: the scheduler's client (in-memory binds or a modelled API
  server, rate-limited) to the simulator's in-process API server
  (:mod:`kubesched.sim.apiserver`, in real time, without kubelets or controllers);
- :mod:`~kubesched.bench.collect`: throughput sampling, histogram percentiles, perf-dash items;
- :mod:`~kubesched.bench.runner`: the wall-clock loop that runs a workload's ops.
"""
