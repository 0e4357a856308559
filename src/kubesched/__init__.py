"""kubesched: a Kubernetes-compatible pod scheduler for large clusters, and its lab."""

__version__ = "0.1.0"
