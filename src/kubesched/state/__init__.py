"""The state room: the cluster as columns.

The node table (:mod:`~kubesched.state.nodes`: dense ``[N, R]`` resource columns, pod counts,
interned labels, taints and topology domains), the rows of resources few nodes have
(:mod:`~kubesched.state.sparse`), GPU device columns (:mod:`~kubesched.state.gpus`), and the
cache (:mod:`~kubesched.state.cache`): the Pod registry, assume / forget, the bulk load of a
snapshot's bound Pods, and observers told of every change.

Imports only ``api`` (``config`` and ``metrics`` are allowed by the layers; it needs neither).
"""
