"""Scheduler configurations at their edges, for the default family.

``edge_config`` (the configuration the main generator draws one time in several),
``scarce_resource_scoring`` (scoring only resources most nodes lack) and ``ties`` (where
upstream chooses at random: a case with a choice, which ``oracle/compare.py`` accepts in any
of upstream's answers).
"""

from __future__ import annotations

import copy
from typing import Any

from draws import EXT, SCORE_PLUGINS, TIERS, Draw


def ties(gen: Draw, items: list[dict[str, Any]], config: dict[str, Any] | None) -> dict[str, Any]:
    """Where upstream chooses at random, a case with a choice (``oracle/compare.py`` accepts
    any answer upstream can give): a twin of a node with copies of its running Pods (equal
    scores, and preemption candidates tied to the end, broken by map order), running Pods
    that started at the same time (preemption's last criterion ties; equal victims on a node
    are taken in the cache's order) and DefaultPreemptionArgs that look for fewer candidates
    than the potential nodes (the dry run starts at a random offset).  ``items`` gains the
    twin; returns ``config`` (the defaults when None) with the args added or replaced."""
    pods = [i for i in items if i["kind"] == "Pod" and i["spec"].get("nodeName")]
    nodes = [i for i in items if i["kind"] == "Node"]
    if pods and gen.chance(0.5):
        start = gen.pick(["2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z"])
        for pod in pods:
            if gen.chance(0.7):
                pod.setdefault("status", {})["startTime"] = start
    if pods and gen.chance(0.5):
        name = gen.pick(pods)["spec"]["nodeName"]
        for node in nodes:
            if node["metadata"]["name"] == name:
                twin = copy.deepcopy(node)
                twin["metadata"]["name"] = f"{name}-twin"
                if "kubernetes.io/hostname" in twin["metadata"].get("labels", {}):
                    twin["metadata"]["labels"]["kubernetes.io/hostname"] = f"{name}-twin"
                twin["metadata"].pop("uid", None)
                items.append(twin)
                for pod in [p for p in pods if p["spec"]["nodeName"] == name]:
                    copied = copy.deepcopy(pod)
                    copied["metadata"]["name"] += "-twin"
                    copied["metadata"]["uid"] = copied["metadata"].get("uid", "") + "-twin"
                    copied["spec"]["nodeName"] = f"{name}-twin"
                    items.append(copied)
    config = copy.deepcopy(config) if config is not None else {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler"}],
    }  # fmt: skip
    args = _args("DefaultPreemptionArgs", minCandidateNodesPercentage=gen.pick([0, 10, 50]),
                 minCandidateNodesAbsolute=gen.pick([1, 2, 3]))  # fmt: skip
    for profile in config["profiles"]:
        entries = [e for e in profile.get("pluginConfig", []) if e["name"] != "DefaultPreemption"]
        profile["pluginConfig"] = [*entries, {"name": "DefaultPreemption", "args": args}]
    return config


def _args(kind: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": kind, **fields}


def edge_config(gen: Draw) -> dict[str, Any]:
    """A configuration at its edges: Score weights 0 (meaning 1) and 100, MultiPoint entries
    with weights, a plugin named both in MultiPoint and Score (the Score entry's weight
    wins), every default plugin's args at their bounds (hardPodAffinityWeight 0 and 100,
    ignorePreferredTermsOfExistingPods, List spreading with defaultConstraints, ignored
    resources and resource groups, RequestedToCapacityRatio shapes of 2-5 points, resource
    weights 1 and 100, addedAffinity, DefaultPreemptionArgs, some limiting the candidates),
    PreScore disabled for the scorers whose Score stands without it (and, at times, for one
    whose Score fails without it)."""
    plugins: dict[str, Any] = {}
    if gen.chance(0.5):
        entries = [
            {"name": p, "weight": gen.pick([0, 1, 100])} for p in gen.r.sample(SCORE_PLUGINS, 2)
        ]
        plugins["multiPoint"] = {"enabled": entries}
    if gen.chance(0.5):
        plugins["score"] = {
            "enabled": [
                {"name": p, "weight": gen.pick([0, 100, 7])} for p in gen.r.sample(SCORE_PLUGINS, 2)
            ]
        }
    if gen.chance(0.15):
        plugins.setdefault("score", {})["disabled"] = [{"name": "*"}]
        plugins["score"].setdefault("enabled", []).append({"name": "NodeResourcesFit", "weight": 2})
    if gen.chance(0.1):
        # NodeAffinity's Filter then computes the Pod's required affinity itself.
        plugins["preFilter"] = {"disabled": [{"name": "NodeAffinity"}]}
    config: list[dict[str, Any]] = []
    if gen.chance(0.5):
        config.append({"name": "InterPodAffinity", "args": _args(
            "InterPodAffinityArgs", hardPodAffinityWeight=gen.pick([0, 1, 100]),
            ignorePreferredTermsOfExistingPods=gen.chance(0.5))})  # fmt: skip
    if gen.chance(0.5):
        spread: dict[str, Any] = {"defaultingType": gen.pick(["List", "System"])}
        if spread["defaultingType"] == "List":
            spread["defaultConstraints"] = [
                {"maxSkew": gen.pick([1, 3]), "topologyKey": key, "whenUnsatisfiable": gen.pick(
                    ["ScheduleAnyway", "DoNotSchedule"])}
                for key in gen.r.sample(["kubernetes.io/hostname", "topology.kubernetes.io/zone"],
                                        gen.r.randint(0, 2))
            ]  # fmt: skip
        config.append(
            {"name": "PodTopologySpread", "args": _args("PodTopologySpreadArgs", **spread)}
        )
    if gen.chance(0.6):
        fit: dict[str, Any] = {}
        if gen.chance(0.3):
            fit["ignoredResources"] = [EXT]
        elif gen.chance(0.3):
            fit["ignoredResourceGroups"] = ["example.com"]
        strategy = gen.pick(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
        resources = [
            {"name": "cpu", "weight": gen.pick([1, 100])},
            {"name": "memory", "weight": gen.pick([1, 100])},
        ]
        if gen.chance(0.4):
            resources.append(
                {"name": gen.pick([EXT, "ephemeral-storage"]), "weight": gen.pick([1, 100])}
            )
        scoring: dict[str, Any] = {"type": strategy, "resources": resources}
        if strategy == "RequestedToCapacityRatio":
            points = sorted(gen.r.sample(range(0, 101, 10), gen.r.randint(2, 5)))
            scoring["requestedToCapacityRatio"] = {
                "shape": [{"utilization": u, "score": gen.r.randint(0, 10)} for u in points]
            }
        fit["scoringStrategy"] = scoring
        config.append({"name": "NodeResourcesFit", "args": _args("NodeResourcesFitArgs", **fit)})
    if gen.chance(0.3):
        res = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
        if gen.chance(0.5):
            res.append({"name": gen.pick([EXT, "ephemeral-storage"]), "weight": 1})
        args = _args("NodeResourcesBalancedAllocationArgs", resources=res)
        config.append({"name": "NodeResourcesBalancedAllocation", "args": args})
    if gen.chance(0.3):
        added: dict[str, Any] = {}
        if gen.chance(0.6):
            added["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "tier", "operator": gen.pick(["In", "NotIn"]),
                                       "values": [gen.pick(TIERS)]}]}]}  # fmt: skip
        if not added or gen.chance(0.5):
            pref = {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}
            added["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": gen.pick([1, 100]), "preference": pref}
            ]
        config.append(
            {"name": "NodeAffinity", "args": _args("NodeAffinityArgs", addedAffinity=added)}
        )
    if gen.chance(0.3):
        percentage, absolute = gen.pick([(100, 100), (100, 1000), (10, 1), (0, 2)])
        config.append({"name": "DefaultPreemption", "args": _args(
            "DefaultPreemptionArgs", minCandidateNodesPercentage=percentage,
            minCandidateNodesAbsolute=absolute)})  # fmt: skip
    if gen.chance(0.3):  # drawn last: the other edge configurations stay as they were
        # Upstream's Score of these three computes its state itself when their PreScore did
        # not run ("Fallback ... when PreScore is disabled"); the other scorers' fail the
        # cycle (a broken configuration: drawn a quarter of the time below).
        fallback = ["NodeResourcesFit", "NodeResourcesBalancedAllocation", "NodeAffinity"]
        names = gen.r.sample(fallback, gen.r.randint(1, 3))
        if gen.chance(0.25):
            # One whose Score needs its PreScore's state: upstream fails every cycle that
            # scores (`failed to read "PreScore..." from cycleState`), as kubesched does.
            names.append(gen.pick(["TaintToleration", "InterPodAffinity", "PodTopologySpread"]))
        plugins["preScore"] = {"disabled": [{"name": n} for n in names]}
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if plugins:
        profile["plugins"] = plugins
    if config:
        profile["pluginConfig"] = config
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [profile],
    }


def scarce_resource_scoring(gen: Draw, config: dict[str, Any] | None) -> dict[str, Any]:
    """``config`` (None: the defaults) with NodeResourcesFit's strategy, and maybe
    BalancedAllocation, scoring only resources most nodes lack (the extended resource,
    ephemeral storage): a node allocating none of them scores 0 (upstream skips a resource
    the node has none of, so the weights sum to 0)."""
    config = config or {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [{"schedulerName": "default-scheduler"}],
    }
    profile = config["profiles"][0]
    scarce = gen.r.sample([EXT, "ephemeral-storage"], gen.r.randint(1, 2))
    resources = [{"name": name, "weight": gen.pick([1, 3, 100])} for name in scarce]
    strategy = gen.pick(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
    scoring: dict[str, Any] = {"type": strategy, "resources": resources}
    if strategy == "RequestedToCapacityRatio":
        scoring["requestedToCapacityRatio"] = {
            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
        }
    entries = [c for c in profile.get("pluginConfig", []) if c["name"] != "NodeResourcesFit"]
    fit = _args("NodeResourcesFitArgs", scoringStrategy=scoring)
    entries.append({"name": "NodeResourcesFit", "args": fit})
    if gen.chance(0.5):
        entries = [c for c in entries if c["name"] != "NodeResourcesBalancedAllocation"]
        args = _args("NodeResourcesBalancedAllocationArgs", resources=[
            {"name": name, "weight": 1} for name in scarce])  # fmt: skip
        entries.append({"name": "NodeResourcesBalancedAllocation", "args": args})
    profile["pluginConfig"] = entries
    return config
