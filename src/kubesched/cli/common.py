"""Helpers shared by the commands: reading manifests and printing results."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.parse import ParsedObjects, load_documents

if TYPE_CHECKING:
    import argparse

    from kubesched.config.featuregates import FeatureGates
    from kubesched.config.types import KubeSchedulerConfiguration

T = TypeVar("T")


def load_one(path: str) -> dict[str, Any]:
    """One object (several documents become a List)."""
    docs = load_documents(path)
    if len(docs) == 1:
        return docs[0]
    return {"apiVersion": "v1", "kind": "List", "items": list(docs)}


def load_list(path: str) -> dict[str, Any]:
    """Every object of a file (List, multi-document YAML, kubectl output) as one List."""
    return {"apiVersion": "v1", "kind": "List", "items": list(load_documents(path))}


def load_config(path: str | None) -> dict[str, Any] | None:
    """A KubeSchedulerConfiguration document, or None for upstream's defaults: read by the
    one function ``run --config`` uses too (:func:`kubesched.config.load.load_config_file`)."""
    from kubesched.config.load import load_config_file

    return load_config_file(path)


def emit(result: dict[str, Any], fmt: str, render: Callable[[dict[str, Any]], str]) -> None:
    """Print ``result`` as JSON or through ``render``."""
    if fmt == "json":
        write_json(result)
    else:
        print(render(result))


WRITE_PIECES = 8192
"""Pieces of encoded JSON :func:`write_json` joins per write."""


def write_json(value: Any) -> None:
    """``print(json.dumps(value, indent=2))`` without holding every piece of the encoding at
    once (an ``explain`` of 10,000 nodes has 300,000 of them, 14 MiB) nor writing them one by
    one (a write call each)."""
    pieces: list[str] = []
    for piece in json.JSONEncoder(indent=2).iterencode(value):
        pieces.append(piece)
        if len(pieces) >= WRITE_PIECES:
            sys.stdout.write("".join(pieces))
            pieces.clear()
    pieces.append("\n")
    sys.stdout.write("".join(pieces))


def check(what: Callable[[], T], file: str | None) -> T:
    """Run a parse step and return its result, attributing any :class:`InputError` to
    ``file``."""
    try:
        return what()
    except InputError as e:
        raise (e.with_file(file) if file else e) from None


def add_version_arguments(parser: argparse.ArgumentParser) -> None:
    """``--kubernetes-version`` and ``--feature-gates``, on every command that decides."""
    from kubesched.config.versions import FLAG_HELP

    parser.add_argument("--kubernetes-version", metavar="VERSION", help=FLAG_HELP)
    parser.add_argument(
        "--feature-gates",
        metavar="A=true,B=false",
        help="feature gates as kube-scheduler's flag, checked against that version's gates "
        "(docs/versions.md)",
    )


class VersionChoice(NamedTuple):
    """What a command line says about the Kubernetes version and gates (parsed, not yet
    checked against a version: that needs the version, which the input may tell)."""

    version: str | None
    """``--kubernetes-version`` (None: not given)."""
    settings: dict[str, bool]
    """``--feature-gates``."""

    def resolve(
        self,
        *,
        told: str | None = None,
        where: str = "",
        base: FeatureGates | None = None,
        quiet: bool = False,
    ) -> FeatureGates:
        """The gates of the run: the flag's version, else ``told`` (what the input says,
        ``where`` naming it; one line on stderr says so unless ``quiet``: :func:`say_told`),
        else ``base``'s (a scenario's), else the default; ``base``'s settings with the flag's
        on top, checked."""
        from kubesched.config import featuregates
        from kubesched.config.versions import DEFAULT_VERSION

        version = self.version
        if version is None and told is not None:
            version = told
            if not quiet:
                say_told(told, where)
        if version is None:
            version = base.version if base is not None else DEFAULT_VERSION
        settings = dict(base.settings) if base is not None else {}
        settings.update(self.settings)
        if base is not None and version == base.version and not self.settings:
            return base
        return featuregates.with_settings(version, settings)


def say_told(version: str, where: str) -> None:
    """The one stderr line saying which version the input told."""
    print(
        f"kubesched: modelling Kubernetes {version} (from {where}); "
        "--kubernetes-version sets another",
        file=sys.stderr,
    )


def version_choice(args: argparse.Namespace) -> VersionChoice:
    """The :class:`VersionChoice` of a command's flags (a bad flag: exit code 2)."""
    from kubesched.config import featuregates, versions

    given = getattr(args, "kubernetes_version", None)
    version = None if given is None else versions.parse_version(given)
    text = getattr(args, "feature_gates", None)
    return VersionChoice(version, featuregates.parse_flag(text) if text else {})


def told_by_nodes(nodes: list[api.Node]) -> str | None:
    """The supported version the Nodes' ``status.nodeInfo.kubeletVersion`` tell (mostly)."""
    from kubesched.config.versions import version_of_nodes

    found = []
    for node in nodes:
        info = (node.raw.get("status") or {}).get("nodeInfo") or {}
        version = info.get("kubeletVersion") if isinstance(info, dict) else None
        if isinstance(version, str):
            found.append(version)
    return version_of_nodes(found)


class Inputs(NamedTuple):
    """A command's inputs, each parsed and checked once (:func:`check_inputs`)."""

    snapshot: ParsedObjects
    pods: list[api.Pod]
    """The Pods of the Pods file, in file order."""
    config: KubeSchedulerConfiguration


def check_inputs(
    cluster: tuple[dict[str, Any] | ParsedObjects, str],
    pods: tuple[dict[str, Any], str],
    config: tuple[dict[str, Any] | None, str | None],
    *,
    admit: bool = True,
    version: VersionChoice | None = None,
) -> Inputs:
    """Parse the snapshot (unless given parsed: :func:`kubesched.api.parse.load_cluster`),
    the Pods (which may name the snapshot's PriorityClasses; their priorities resolved
    unless ``admit`` is False: :func:`kubesched.api.parse.parse_objects`) and the
    configuration once each, and cross-check the snapshot's job-layer objects, so that an
    error names the file it came from.  References to objects the snapshot lacks are not
    errors (the commands warn about them once, as they run).  Returns what was parsed, for
    the command to use rather than parse again.  ``version`` is the command line's Kubernetes
    version and gates; without a version, the snapshot's Nodes' kubelets tell it."""
    from kubesched.admission import references
    from kubesched.api import workload
    from kubesched.api.parse import parse_objects, split_documents, with_priority_classes
    from kubesched.config.load import load_config as load_cfg
    from kubesched.plugins.registry import known_plugin_names

    given = cluster[0]
    if isinstance(given, ParsedObjects):
        snapshot, cluster_docs = given, given.others
    else:
        docs = check(lambda: split_documents([given]), cluster[1])
        snapshot, cluster_docs = check(lambda: parse_objects(docs), cluster[1]), docs
    incoming = check(
        lambda: parse_objects(
            with_priority_classes(split_documents([pods[0]]), cluster_docs), admit=admit
        ),
        pods[1],
    )
    check(
        lambda: references.check(snapshot.others, [*snapshot.pods, *incoming.pods], warn=False),
        cluster[1],
    )
    choice = version or VersionChoice(None, {})
    gates = choice.resolve(
        told=told_by_nodes(snapshot.nodes), where="the snapshot's Nodes' kubeletVersion"
    )
    check(lambda: workload.admit(snapshot.others, gates), cluster[1])
    check(lambda: workload.admit(incoming.others, gates), pods[1])
    for pods_of, file in ((snapshot.pods, cluster[1]), (incoming.pods, pods[1])):
        refs = workload.check_pod_refs(pods_of, gates)
        if refs:
            raise InputError(refs, file=file)
    cfg = check(
        lambda: load_cfg(config[0], known_plugins=known_plugin_names(), gates=gates), config[1]
    )
    return Inputs(snapshot, incoming.pods, cfg)
