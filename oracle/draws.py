"""The generators' shared vocabulary and their random source.

Every family (``cases``, ``hint_cases``) draws from a :class:`Draw` over a private
``random.Random`` (so a case is reproduced from its seed and index alone) and names the same
zones, apps, tiers, namespaces, images, taints and extended resource, so that the objects of
one family meet those of another.
"""

from __future__ import annotations

import random
from typing import Any

ZONES = ["zone-a", "zone-b", "zone-c"]
APPS = ["web", "db", "cache"]
TIERS = ["front", "back"]
NAMESPACES = ["default", "team-a", "team-b"]
IMAGES = ["nginx:1.27", "redis:7", "busybox:1.36"]
TAINT_KEYS = ["dedicated", "gpu", "spot"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
EXT = "example.com/foo"
SCORE_PLUGINS = [
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "InterPodAffinity",
    "PodTopologySpread",
]
FILTER_PLUGINS = ["NodePorts", "ImageLocality", "InterPodAffinity", "PodTopologySpread"]


class Draw:
    """A private random source and its two verbs."""

    def __init__(self, rnd: random.Random) -> None:
        self.r = rnd

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq: list[Any]) -> Any:
        return seq[self.r.randrange(len(seq))]
