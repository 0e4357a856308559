"""PodGroupPodsCount: prefer the placement that schedules the most members of a group.

Upstream ``pkg/scheduler/framework/plugins/podgrouppodscount`` (v1.37.2, gate
TopologyAwareWorkloadScheduling, weight 1 in the default profile; no args).  A feasible
placement scores the group's members already scheduled plus those it placed (a
CompositePodGroup's: those of every PodGroup under it, its placed ones all its subtree's that
succeeded); the scores are
then normalized to 0-100 by the highest (an error when every score is 0: ``no pods from pod
group are assigned to any of the candidate placements``).
"""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework import interface as fw
from kubesched.framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE
from kubesched.framework.podgroups import PodGroupManager, manager_of

NAME = names.POD_GROUP_PODS_COUNT


class PodGroupPodsCount:
    """PlacementScore by members placed (see the module docstring)."""

    name = NAME

    def __init__(self, args: object | None, handle: fw.Handle) -> None:
        del args
        self.manager: PodGroupManager = manager_of(handle)

    def score_placement(self, key: str, rows: fw.IntArray, assigned: list[api.Pod]) -> int:
        """``ScorePlacement``: scheduled members plus the placement's proposed ones."""
        del rows
        return len(self.manager.scheduled_under(key)) + len(assigned)

    def normalize_placement_scores(self, scores: list[int]) -> fw.Status:
        """``NormalizePlacementScore``: ``score * 100 / max`` (integer division)."""
        top = max(scores, default=0)
        if top == 0:
            return fw.error(
                "no pods from pod group are assigned to any of the candidate placements"
            )
        for i, s in enumerate(scores):
            scores[i] = MIN_NODE_SCORE + s * (MAX_NODE_SCORE - MIN_NODE_SCORE) // top
        return fw.SUCCESS


def new(args: object | None, handle: fw.Handle) -> PodGroupPodsCount:
    """Factory (no args type upstream)."""
    return PodGroupPodsCount(args, handle)
