"""Helpers shared by the commands: reading manifests and printing results."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubesched.api.errors import InputError
from kubesched.api.parse import load_documents


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
        print(json.dumps(result, indent=2))
    else:
        print(render(result))


def check(what: Callable[[], object], file: str | None) -> None:
    """Run a parse step, attributing any :class:`InputError` to ``file``."""
    try:
        what()
    except InputError as e:
        raise (e.with_file(file) if file else e) from None


def check_inputs(
    cluster: tuple[dict[str, Any], str],
    pods: tuple[dict[str, Any], str],
    config: tuple[dict[str, Any] | None, str | None],
) -> None:
    """Parse the snapshot, the Pods and the configuration once each, so that an error names
    the file it came from."""
    from kubesched.api.parse import parse_objects, split_documents
    from kubesched.config.load import load_config as load_cfg
    from kubesched.plugins.registry import known_plugin_names

    check(lambda: parse_objects(split_documents([cluster[0]])), cluster[1])
    check(lambda: parse_objects(split_documents([pods[0]])), pods[1])
    check(lambda: load_cfg(config[0], known_plugins=known_plugin_names()), config[1])
