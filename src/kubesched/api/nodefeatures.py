"""Node declared features: what a Node says it supports (``status.declaredFeatures``) and what
a Pod needs of it, as upstream's ``k8s.io/component-helpers/nodedeclaredfeatures`` library
infers it (``InferForScheduling`` of each registered feature).

The parse reads both here, once, for the NodeDeclaredFeatures plugin
(:mod:`kubesched.plugins.nodedeclaredfeatures`), which keeps those of its Kubernetes
release's feature registry.  Of the features registered up to v1.37 three are inferred from a
Pod's spec (the others concern updates and are never required for scheduling):

- ``RestartAllContainersOnContainerExits``: a container or init container with a
  ``restartPolicyRules`` rule whose ``action`` is ``RestartAllContainers`` (v1.35+);
- ``UserNamespacesHostNetworkSupport``: ``hostNetwork: true`` with ``hostUsers: false``
  (v1.36+);
- ``VolumeBindMountOptions``: a container, init container or ephemeral container with a
  volume mount whose ``bindMountOptions`` is not empty (v1.37+).
"""

from __future__ import annotations

from kubesched.api import fields as f
from kubesched.api.fields import Obj, fail, join

__all__ = [
    "RESTART_ALL_CONTAINERS",
    "USER_NAMESPACES_HOST_NETWORK",
    "VOLUME_BIND_MOUNT_OPTIONS",
    "declared_features",
    "required_features",
]

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"
_RESTART_ALL_ACTION = "RestartAllContainers"
"""``v1.ContainerRestartRuleActionRestartAllContainers``."""


def required_features(spec: Obj, path: str, host_network: bool) -> tuple[str, ...]:
    """The node features the Pod of ``spec`` (at field path ``path``) needs to be scheduled,
    sorted: every feature the newest supported library infers (module docstring)."""
    out: set[str] = set()
    if host_network and not f.boolean(spec, "hostUsers", path, default=True):
        out.add(USER_NAMESPACES_HOST_NETWORK)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for i, c in enumerate(f.seq(spec, key, path)):
            cpath = join(join(path, key), i)
            c = f.as_mapping(c, cpath)
            if key != "ephemeralContainers" and _restarts_all(c, cpath):
                out.add(RESTART_ALL_CONTAINERS)
            if _binds_with_options(c, cpath):
                out.add(VOLUME_BIND_MOUNT_OPTIONS)
    return tuple(sorted(out))


def _restarts_all(c: Obj, path: str) -> bool:
    rules_path = join(path, "restartPolicyRules")
    for i, rule in enumerate(f.seq(c, "restartPolicyRules", path)):
        rpath = join(rules_path, i)
        if f.string(f.as_mapping(rule, rpath), "action", rpath) == _RESTART_ALL_ACTION:
            return True
    return False


def _binds_with_options(c: Obj, path: str) -> bool:
    mounts_path = join(path, "volumeMounts")
    for i, mount in enumerate(f.seq(c, "volumeMounts", path)):
        mpath = join(mounts_path, i)
        if f.string_list(f.as_mapping(mount, mpath), "bindMountOptions", mpath):
            return True
    return False


def declared_features(status: Obj, path: str) -> tuple[str, ...]:
    """A Node's ``status.declaredFeatures`` (``status`` at ``path``): sorted and without
    duplicates, as the API server validates it (an input that is not is refused with the API
    server's message)."""
    names = f.string_list(status, "declaredFeatures", path)
    list_path = join(path, "declaredFeatures")
    for i in range(1, len(names)):
        if names[i - 1] == names[i]:
            fail(join(list_path, i), f'Duplicate value: "{names[i]}"')
        if names[i - 1] > names[i]:
            fail(
                join(list_path, i),
                f'Invalid value: "{names[i]}": list must be sorted alphabetically',
            )
    return names
