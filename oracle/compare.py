"""Compare ``kubesched.explain`` with upstream's answer (``kube-oracle explain``).

``Oracle`` keeps one ``kube-oracle explain --stream`` process and sends it requests one
JSON line each.  ``differences(ours, theirs)`` lists what a user would see differ: the
result, the message of a Pod that does not schedule, every node's verdict, rejecting plugin,
reasons, weighted score and per-plugin normalized scores (a plugin upstream skips counts
as 0), and for a scheduled Pod the set of top-scored nodes (upstream picks one of them at
random); for an unschedulable Pod what preemption does, any of the answers upstream's
choices allow (``choices``: the candidates its dry run meets first, a tie between
candidates, the order of equally important victims).  ``shrink`` removes objects and fields
while the case still differs, so a saved regression is small.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
BINARY = ROOT / "bin" / "kube-oracle"
BUILD_HINT = "bash oracle/build.sh (needs Go; builds upstream kube-scheduler v1.34)"
# The Kubernetes minor releases oracle/build.sh builds a kube-oracle of (oracle/bin/vV/), and
# the default build's (oracle/go.mod; oracle/bin/kube-oracle).
VERSIONS = ("1.34", "1.35", "1.36", "1.37")
DEFAULT_VERSION = "1.34"


def binary(version: str | None) -> Path:
    """``oracle/bin/vV/kube-oracle`` of ``version``; the default build without one."""
    return BINARY if version is None else ROOT / "bin" / f"v{version}" / "kube-oracle"


def kubesched_options(version: str | None, gates: dict[str, bool] | None = None) -> dict[str, Any]:
    """The keyword arguments that tell kubesched which Kubernetes to answer as: the oracle's
    (``oracle/diff.py --kubernetes-version``; the default build's without one), and the
    request's ``featureGates`` when it sets any.  Every kubesched answer of the differential
    run is asked with them."""
    options: dict[str, Any] = {"kubernetes_version": version or DEFAULT_VERSION}
    if gates:
        options["feature_gates"] = gates
    return options


def gates_flag(gates: dict[str, bool]) -> str:
    """``--feature-gates=A=true,B=false`` of ``gates`` (sorted), as kube-oracle takes it."""
    return "--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()))


class OracleMissing(RuntimeError):
    """kube-oracle has not been built."""


class Oracle:
    """One ``kube-oracle VERB --stream`` process (``explain`` or ``schedule``).  A request
    with ``featureGates`` is answered by another such process started with them
    (``--feature-gates``: upstream's gates are the process's), kept for the next request
    that sets the same."""

    def __init__(
        self,
        binary: Path = BINARY,
        verb: str = "explain",
        env: dict[str, str] | None = None,
        hint: str = BUILD_HINT,
        gates: dict[str, bool] | None = None,
    ) -> None:
        if not os.access(binary, os.X_OK):
            raise OracleMissing(f"{binary} is missing: run {hint}")
        self._start = (binary, verb, env, hint)
        self._gated: dict[str, Oracle] = {}
        self._flag = gates_flag(gates) if gates else ""
        flags = [self._flag] if gates else []
        self.proc = subprocess.Popen(
            [str(binary), verb, "--stream", *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        gates = request.get("featureGates")
        flag = gates_flag(gates) if gates else ""
        if flag != self._flag:
            if flag not in self._gated:
                self._gated[flag] = Oracle(*self._start, gates=gates)
            return self._gated[flag].ask(request)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("kube-oracle exited")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        for gated in self._gated.values():
            gated.close()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def ours(
    request: dict[str, Any], version: str | None = None, pool_seed: int | None = None
) -> dict[str, Any]:
    """kubesched.explain's answer (as Kubernetes ``version``: ``kubesched_options``); an
    input error is an answer too (upstream may accept the input).  ``pool_seed``: each
    node's device pools searched in an order drawn from it (``kubesched.explain``)."""
    import kubesched

    options = kubesched_options(version, request.get("featureGates"))
    if pool_seed is not None:
        options["pool_seed"] = pool_seed
    return _answer(
        kubesched.explain,
        request["cluster"],
        request["pod"],
        request["config"],
        preemption=True,
        **options,
    )


POOL_ORDERS = 12
"""How many pool orders ``one_of_pool_orders`` draws."""


def searches_pools(request: dict[str, Any]) -> bool:
    """Whether the request holds ResourceSlices: the device pools upstream's allocator
    walks in Go map order, a different order each time it is asked."""
    return any(x.get("kind") == "ResourceSlice" for x in request["cluster"]["items"])


def checks_drivers(request: dict[str, Any]) -> bool:
    """Whether the request holds CSIDrivers: under VolumeLimitScaling upstream's
    NodeVolumeLimits walks the Pod's new volumes in Go map order and names the first driver
    missing from a node, so with two missing it names either (``docs/fidelity.md``)."""
    return any(x.get("kind") == "CSIDriver" for x in request["cluster"]["items"])


def one_of_pool_orders(
    oracle: Any,
    request: dict[str, Any],
    version: str | None,
    mine: dict[str, Any],
    theirs: dict[str, Any],
    tries: int,
    orders: int = POOL_ORDERS,
) -> bool:
    """Whether an explain answer that differs (``mine``, upstream's ``theirs``) is one of
    upstream's: for a request with device pools (``searches_pools``) upstream is asked up
    to ``tries`` more times, and kubesched answers with each node's pools in the orders
    drawn from seeds 1..``orders`` (``kubesched.explain``'s ``pool_seed``); one answer of
    kubesched's the same as one of upstream's is a match.  Upstream's v1.34 and v1.35
    allocators keep a device's counters reserved after a constraint or taint passes it
    over, so whether a node fits can depend on that order (``docs/fidelity.md``).  A
    request with CSIDrivers (``checks_drivers``) is asked again likewise (which missing
    driver upstream names is Go map order too)."""
    pools = searches_pools(request)
    if not pools and not checks_drivers(request):
        return False
    answers = [theirs]
    for _ in range(tries):
        again = oracle.ask(request)
        if not differences(mine, again):
            return True
        answers.append(again)
    if not pools:
        return False
    for seed in range(1, orders + 1):
        other = ours(request, version, pool_seed=seed)
        if any(not differences(other, a) for a in answers):
            return True
    return False


def ours_schedule(
    request: dict[str, Any],
    version: str | None = None,
    release_seed: int | None = None,
    pool_seed: int | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """kubesched.schedule's answer (an input error is an answer too); ``release_seed``: the
    order of Pods one event releases drawn from it (``kubesched.schedule``); ``pool_seed``:
    each node's device pools searched in an order drawn from it; ``seed``: the scheduler's
    random draws (a preemption dry run's offset, ties among top-scored nodes); the request's
    ``volumeFaults`` (what goes wrong with VolumeBinding's PreBind writes, as kube-oracle's
    fake API server and PV controller play them) as its ``volume_faults``, and ``claimFaults``
    (DynamicResources' claim writes, ``claimfaults.go``) as its ``claim_faults``, and
    ``bindFaults`` (a Pod's binding refused, ``schedule.go``) as its ``bind_faults``."""
    import kubesched

    options = kubesched_options(version, request.get("featureGates"))
    if release_seed is not None:
        options["release_seed"] = release_seed
    if pool_seed is not None:
        options["pool_seed"] = pool_seed
    if seed is not None:
        options["seed"] = seed
    if request.get("volumeFaults"):
        options["volume_faults"] = request["volumeFaults"]
    if request.get("claimFaults"):
        options["claim_faults"] = request["claimFaults"]
    if request.get("bindFaults"):
        options["bind_faults"] = request["bindFaults"]
    return _answer(
        kubesched.schedule,
        request["cluster"],
        request["pods"],
        request["config"],
        **options,
    )


def _answer(
    fn: Callable[..., dict[str, Any]], cluster: Any, pods: Any, config: Any, **kw: Any
) -> dict[str, Any]:
    from kubesched.api.errors import InputError

    try:
        return fn(
            copy.deepcopy(cluster),
            copy.deepcopy(pods),
            config,
            **kw,
        )
    except InputError as e:
        return {"error": str(e)}


def _error_differences(mine: dict[str, Any], theirs: dict[str, Any]) -> list[str] | None:
    """When either side is an error: the difference, if only one is (None: neither is)."""
    if "error" not in theirs and "error" not in mine:
        return None
    if ("error" in theirs) != ("error" in mine):
        return [f"error: ours {mine.get('error')!r}, upstream {theirs.get('error')!r}"]
    return []


def schedule_differences(mine: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """Per submitted Pod: the result, the node and, for a Pod both attempted once and could
    not schedule, the message.  Attempts (and so the last attempt's message) are not
    compared otherwise: upstream runs in wall-clock time, where retries depend on timing
    (its preemption deletes victims asynchronously, after the cycle)."""
    errors = _error_differences(mine, theirs)
    if errors is not None:
        return errors
    out = []
    for key, b in sorted(theirs["pods"].items()):
        a = mine["pods"].get(key)
        if a is None:
            out.append(f"{key}: missing from ours")
            continue
        for field in ("result", "node"):
            if a.get(field) != b.get(field):
                out.append(f"{key}.{field}: ours {a.get(field)!r}, upstream {b.get(field)!r}")
        once = a.get("attempts") == b.get("attempts") == 1
        same = _same_message(a["message"], b["message"])
        if b["result"] == "Unschedulable" and once and not same:
            out.append(f"{key}.message: ours {a['message']!r}, upstream {b['message']!r}")
    return out


_PERMIT_TIMEOUT = re.compile(r"(rejected due to timeout after waiting )([0-9hmnsuµ.]+)( at plugin)")
_GO_DURATION_PART = re.compile(r"([0-9.]+)(h|ms|us|µs|ns|m|s)")
_GO_UNIT_SECONDS = {
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
}


def _same_message(mine: str, theirs: str) -> bool:
    """Equal messages, a Permit timeout's wait taken to the whole second: kube-oracle ends the
    waits of a quiet run at once, every one ``5m0s`` (as if each member began to wait at the
    same moment), where a v1.35 gang's later member waits what is left of the group's
    deadline (upstream: microseconds of wall clock less; kubesched: its cycles' virtual
    time less, ``4m59.9995s``)."""

    def whole(m: re.Match[str]) -> str:
        seconds = sum(
            float(n) * _GO_UNIT_SECONDS[unit] for n, unit in _GO_DURATION_PART.findall(m.group(2))
        )
        return f"{m.group(1)}{round(seconds)}s{m.group(3)}"

    return _PERMIT_TIMEOUT.sub(whole, mine) == _PERMIT_TIMEOUT.sub(whole, theirs)


def differences(mine: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """What differs between kubesched's and upstream's answers, one line each.

    kube-oracle's ``explain`` runs the framework for the one Pod; for a Workload API group
    member kubesched answers as the PodGroup cycle would and keeps the one-Pod verdict it
    replaced under ``podGroup.alone``: that is what is compared (the group's verdict is
    judged by ``--verb schedule``)."""
    errors = _error_differences(mine, theirs)
    if errors is not None:
        return errors
    alone = (mine.get("podGroup") or {}).get("alone")
    if alone:
        mine = {**mine, **alone}
    out: list[str] = []
    if mine["result"] != theirs["result"]:
        out.append(f"result: ours {mine['result']}, upstream {theirs['result']}")
    if theirs["result"] in ("Unschedulable", "Gated") and mine["message"] != theirs["message"]:
        out.append(f"message: ours {mine['message']!r}, upstream {theirs['message']!r}")
    if theirs["result"] == "Scheduled" and mine["result"] == "Scheduled":
        top = set(theirs["topNodes"])
        if mine["selectedNode"] not in top:
            out.append(f"selectedNode: ours {mine['selectedNode']}, upstream one of {sorted(top)}")
    if theirs["result"] == "Unschedulable" and mine["result"] == "Unschedulable":
        out.extend(_preemption_differences(mine.get("preemption"), theirs.get("preemption")))
    mine_nodes, their_nodes = mine.get("nodes", {}), theirs.get("nodes", {})
    if theirs["result"] != "Error":
        for name in sorted(set(mine_nodes) | set(their_nodes)):
            out.extend(_node_differences(name, mine_nodes.get(name), their_nodes.get(name)))
    return out


def _preemption_differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    """The nominated node, the victims and PostFilter's message of an unschedulable Pod.
    When a choice of upstream's could change its answer (the candidates its dry run meets
    first, a tie between candidates, the order of equally important victims), it lists
    every answer it can give (``choices``): ours may be any of them."""
    a, b = a or {}, b or {}
    choices = b.get("choices") or [b]
    lines = [_one_preemption_differences(a, c) for c in choices]
    if any(not d for d in lines):
        return []
    if len(choices) > 1:
        return [f"{line} (upstream: one of {len(choices)} choices)" for line in lines[0]]
    return lines[0]


def _one_preemption_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for key in ("nominatedNode", "victims"):
        if a.get(key) != b.get(key) and not (
            key == "victims" and not a.get(key) and not b.get(key)
        ):
            out.append(f"preemption.{key}: ours {a.get(key)!r}, upstream {b.get(key)!r}")
    mine, theirs = a.get("message", ""), b.get("message", "")
    if mine != theirs:
        out.append(f"preemption.message: ours {mine!r}, upstream {theirs!r}")
    return out


def _node_differences(name: str, a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    if a is None or b is None:
        return [f"{name}: ours {'absent' if a is None else 'present'}, upstream the other"]
    out = []
    for key in ("feasible", "plugin", "reasons", "score"):
        x, y = a.get(key), b.get(key)
        if key == "reasons" and isinstance(x, list) and isinstance(y, list):
            x, y = _scalar_order(x), _scalar_order(y)
        if x != y:
            out.append(f"{name}.{key}: ours {a.get(key)!r}, upstream {b.get(key)!r}")
    sa, sb = a.get("scores", {}), b.get("scores", {})
    for plugin in sorted(set(sa) | set(sb)):
        if sa.get(plugin, 0) != sb.get(plugin, 0):
            out.append(f"{name}.scores.{plugin}: ours {sa.get(plugin)}, upstream {sb.get(plugin)}")
    return out


_FIXED = {f"Insufficient {n}" for n in ("cpu", "memory", "ephemeral-storage")}


def _scalar_order(reasons: list[Any]) -> list[Any]:
    """NodeResourcesFit's reasons with its scalar resources' ``Insufficient`` entries sorted
    among themselves: upstream lists those in Go map order (at random), after cpu, memory
    and ephemeral storage."""
    scalar = sorted(
        r
        for r in reasons
        if isinstance(r, str) and r.startswith("Insufficient ") and r not in _FIXED
    )
    it = iter(scalar)
    return [
        next(it) if isinstance(r, str) and r.startswith("Insufficient ") and r not in _FIXED else r
        for r in reasons
    ]


def compare(oracle: Oracle, request: dict[str, Any], version: str | None = None) -> list[str]:
    return differences(ours(request, version), oracle.ask(request))


def shrink(request: dict[str, Any], differs: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Greedily drop cluster items, submitted objects (a schedule request's ``pods``) and
    Pod/config fields while ``differs`` stays true."""
    best = copy.deepcopy(request)
    changed = True
    while changed:
        changed = False
        for candidate in _smaller(best):
            if differs(candidate):
                best, changed = candidate, True
                break
    return best


def _smaller(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    items = request["cluster"]["items"]
    for i in range(len(items)):
        c = copy.deepcopy(request)
        del c["cluster"]["items"][i]
        yield c
    if request.get("config") is not None:
        c = copy.deepcopy(request)
        c["config"] = None
        yield c
    for i in range(len(request.get("pods", []))):  # a schedule request's submitted objects
        c = copy.deepcopy(request)
        del c["pods"][i]
        yield c
    for path in _paths(request.get("pod", {}).get("spec", {}), ("pod", "spec")):
        c = copy.deepcopy(request)
        parent: Any = c
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        yield c


def _paths(value: Any, prefix: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """Removable leaves and subtrees of the incoming Pod's spec, biggest first."""
    if isinstance(value, dict):
        for key in list(value):
            if prefix == ("pod", "spec") and key == "containers":
                continue
            yield (*prefix, key)
            yield from _paths(value[key], (*prefix, key))
    elif isinstance(value, list) and len(value) > 1:
        for i in range(len(value)):
            yield (*prefix, i)
