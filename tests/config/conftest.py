"""Shared data for the config tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.config import defaults

KNOWN = frozenset(defaults.UPSTREAM_PLUGIN_NAMES | {"CustomSort", "AnotherSort", "CustomBind"})
"""Plugin names the tests treat as registered."""


def base_config() -> dict[str, Any]:
    """Upstream validation_test.go's ``validConfig``, in v1 YAML form."""
    return copy.deepcopy(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "parallelism": 8,
            "clientConnection": {
                "acceptContentTypes": "application/json",
                "contentType": "application/json",
                "qps": 10,
                "burst": 10,
            },
            "leaderElection": {
                "resourceLock": "leases",
                "leaderElect": True,
                "leaseDuration": "30s",
                "renewDeadline": "15s",
                "retryPeriod": "5s",
                "resourceNamespace": "name",
                "resourceName": "name",
            },
            "podInitialBackoffSeconds": 1,
            "podMaxBackoffSeconds": 1,
            "percentageOfNodesToScore": 35,
            "profiles": [
                {
                    "schedulerName": "me",
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "CustomSort"}]},
                        "score": {"disabled": [{"name": "*"}]},
                    },
                    "pluginConfig": [
                        {
                            "name": "DefaultPreemption",
                            "args": {
                                "minCandidateNodesPercentage": 10,
                                "minCandidateNodesAbsolute": 100,
                            },
                        }
                    ],
                },
                {
                    "schedulerName": "other",
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "CustomSort"}]},
                        "bind": {"enabled": [{"name": "CustomBind"}]},
                    },
                },
            ],
            "extenders": [{"prioritizeVerb": "prioritize", "weight": 1}],
        }
    )


@pytest.fixture
def valid() -> dict[str, Any]:
    """A fresh copy of :func:`base_config`."""
    return base_config()
