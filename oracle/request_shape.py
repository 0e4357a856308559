"""The shape of a kube-oracle request, read one way by every generator family that adds to
a drawn case: the cluster's objects, the Pods to place (``pod`` in an explain request,
``pods`` in a schedule request) and the cluster's node names."""

from __future__ import annotations

from typing import Any


def cluster_items(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's cluster objects (a ``v1`` List's ``items``), the list itself: a family
    adds to it in place."""
    items: list[dict[str, Any]] = request["cluster"]["items"]
    return items


def incoming_pods(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The Pods the request asks to place: a schedule request's ``pods`` (the list itself)
    or an explain request's one ``pod``."""
    if "pods" in request:
        pods: list[dict[str, Any]] = request["pods"]
        return pods
    return [request["pod"]]


def node_names(items: list[dict[str, Any]]) -> list[str]:
    """The names of the Nodes among ``items``, in their order."""
    return [o["metadata"]["name"] for o in items if o.get("kind") == "Node"]
