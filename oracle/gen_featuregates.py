"""Generate ``src/kubesched/config/featuregates_data.py``: the feature gates kube-scheduler of
each supported Kubernetes minor version knows, read from upstream's Go sources.

kube-scheduler's ``--feature-gates`` is ``utilfeature.DefaultMutableFeatureGate``, which holds
(by the ``init`` functions and ``cmd/kube-scheduler/app/server.go``'s ``AddFeatureGates``
calls) the versioned specs of these files, per release:

- ``k8s.io/kubernetes/pkg/features/kube_features.go`` (its map also repeats the generic
  apiserver, apiextensions, controller-manager and zpages gates) and its gate dependencies;
- ``k8s.io/apiserver/pkg/features/kube_features.go`` (linked in through the imports);
- ``k8s.io/client-go/features/known_features.go`` (added through the client adapter);
- ``k8s.io/component-base``: ``logs/api/v1``, ``metrics/features``, ``zpages/features``;
- the two special gates ``AllAlpha`` and ``AllBeta``.

A gate's spec at release ``1.M`` is upstream's ``featureSpecAtEmulationAndMinCompatVersion``:
the last entry whose ``Version`` is at most ``1.M`` and whose ``MinCompatibilityVersion``
(if any) is at most ``1.(M-1)`` (the default minimum compatibility version); a gate with no
such entry is ``PreAlpha`` (default false).

Usage (the modules must be in the Go module cache: ``go mod download
k8s.io/kubernetes@v1.37.2 k8s.io/component-base@v0.37.2 k8s.io/apiserver@v0.37.2
k8s.io/client-go@v0.37.2`` and the same for the other releases)::

    python oracle/gen_featuregates.py > src/kubesched/config/featuregates_data.py
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

RELEASES = {"1.34": "1.34.4", "1.35": "1.35.4", "1.36": "1.36.3", "1.37": "1.37.2"}
"""Supported minor version -> the upstream patch release whose sources are read."""

MOD = Path(os.environ.get("GOMODCACHE", Path.home() / "go" / "pkg" / "mod")) / "k8s.io"

_KEY = re.compile(r"^\t+(?:[A-Za-z]+\.)?([A-Z][A-Za-z0-9]*): \{\s*$")
_SPEC = re.compile(r'^\t+\{Version: version\.MustParse\("([0-9.]+)"\),(.*)\},?\s*(//.*)?$')
_DEFAULT = re.compile(r"Default: (true|false)")
_PRE = re.compile(r"PreRelease: (?:featuregate\.)?([A-Za-z]+)")
_LOCK = re.compile(r"LockToDefault: (true|false)")
_MINCOMPAT = re.compile(r'MinCompatibilityVersion: version\.MustParse\("([0-9.]+)"\)')
_CONST = re.compile(r'^\t([A-Z][A-Za-z0-9]*)\s+(?:featuregate\.)?Feature = "([^"]+)"')

Spec = tuple[tuple[int, int], bool, str, bool, tuple[int, int] | None]


def _ver(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def _sources(minor: str) -> list[Path]:
    patch = RELEASES[minor]
    staging = "0." + patch.split(".", 1)[1]
    return [
        MOD / f"kubernetes@v{patch}" / "pkg/features/kube_features.go",
        MOD / f"apiserver@v{staging}" / "pkg/features/kube_features.go",
        MOD / f"client-go@v{staging}" / "features/known_features.go",
        MOD / f"component-base@v{staging}" / "logs/api/v1/kube_features.go",
        MOD / f"component-base@v{staging}" / "metrics/features/kube_features.go",
        MOD / f"component-base@v{staging}" / "zpages/features/kube_features.go",
    ]


def parse(path: Path) -> tuple[dict[str, list[Spec]], dict[str, list[str]]]:
    """Gate identifier -> its versioned specs, and gate -> dependencies, of one Go file."""
    consts: dict[str, str] = {}
    specs: dict[str, list[Spec]] = {}
    deps: dict[str, list[str]] = {}
    key: str | None = None
    in_deps = False
    for line in path.read_text().splitlines():
        if m := _CONST.match(line):
            consts[m.group(1)] = m.group(2)
            continue
        if "FeatureGateDependencies = map[" in line:
            in_deps = True
            continue
        if in_deps:
            if line.startswith("}"):
                in_deps = False
            elif m := re.match(
                r"^\t(?:[a-z]+\.)?([A-Z]\w*): \{(.*)\},?$", line.split("//")[0].rstrip()
            ):
                body = re.sub(r"featuregate\.Feature\(([^)]*)\)", r"\1", m.group(2))
                deps[m.group(1)] = re.findall(r"(?:[a-z]+\.)?([A-Z]\w*)", body)
            continue
        if m := _KEY.match(line):
            key = m.group(1)
            specs.setdefault(key, [])
            continue
        if key is not None and (m := _SPEC.match(line)):
            body = m.group(2)
            default, pre = _DEFAULT.search(body), _PRE.search(body)
            if default is None or pre is None:
                raise SystemExit(f"{path}: cannot read spec line {line!r}")
            lock = _LOCK.search(body)
            mincompat = _MINCOMPAT.search(body)
            specs[key].append(
                (
                    _ver(m.group(1)),
                    default.group(1) == "true",
                    pre.group(1),
                    bool(lock and lock.group(1) == "true"),
                    _ver(mincompat.group(1)) if mincompat else None,
                )
            )
        elif line.strip() in ("},", "}"):
            key = None
    named = {consts.get(k, k): v for k, v in specs.items() if v}
    named_deps = {consts.get(k, k): [consts.get(d, d) for d in v] for k, v in deps.items() if v}
    return named, named_deps


def at(specs: list[Spec], minor: str) -> tuple[bool, str, bool]:
    """``featureSpecAtEmulationAndMinCompatVersion`` at release ``minor``."""
    emulation = _ver(minor)
    min_compat = (emulation[0], emulation[1] - 1)
    for version, default, pre, lock, mincompat in reversed(specs):
        if version > emulation or (mincompat is not None and mincompat > min_compat):
            continue
        return default, pre, lock
    return False, "PreAlpha", False


def inventory(minor: str) -> tuple[dict[str, tuple[bool, str, bool]], dict[str, list[str]]]:
    """Every gate of release ``minor`` with its spec there, and the gate dependencies."""
    all_specs: dict[str, list[Spec]] = {}
    all_deps: dict[str, list[str]] = {}
    for path in _sources(minor):
        if not path.exists():
            continue  # e.g. a component-base package a release does not have
        specs, deps = parse(path)
        for name, spec in specs.items():
            all_specs.setdefault(name, spec)
        all_deps.update(deps)
    gates = {name: at(spec, minor) for name, spec in all_specs.items()}
    gates["AllAlpha"] = (False, "Alpha", False)
    gates["AllBeta"] = (False, "Beta", False)
    return dict(sorted(gates.items())), dict(sorted(all_deps.items()))


def main() -> None:
    out = [
        '"""Generated by ``oracle/gen_featuregates.py`` from upstream\'s Go sources: do not edit.',
        "",
        "``GATES[minor][name] = (default, preRelease, lockToDefault)`` is the spec of every",
        "feature gate kube-scheduler of that release knows, at that release (emulation version",
        "the binary's); ``DEPENDENCIES[minor][name]`` the gates ``name`` needs enabled.",
        "Sources, per release: "
        + ", ".join(f"v{p}" for p in RELEASES.values())
        + " (kubernetes; the staging",
        "modules at the same minor, v0.M.P).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "GATES: dict[str, dict[str, tuple[bool, str, bool]]] = {",
    ]
    deps_out = ["DEPENDENCIES: dict[str, dict[str, tuple[str, ...]]] = {"]
    for minor in RELEASES:
        gates, deps = inventory(minor)
        out.append(f'    "{minor}": {{')
        out += [f'        "{n}": ({d}, "{p}", {lk}),' for n, (d, p, lk) in gates.items()]
        out.append("    },")
        deps_out.append(f'    "{minor}": {{')
        deps_out += [
            f'        "{n}": ({", ".join(repr(x) for x in v)},),'.replace("'", '"')
            for n, v in deps.items()
        ]
        deps_out.append("    },")
    out.append("}")
    deps_out.append("}")
    sys.stdout.write("\n".join([*out, "", *deps_out]) + "\n")


if __name__ == "__main__":
    main()
