"""NodeTable.request_vector: the reused answer is the same as a fresh one."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.state.nodes import NodeTable


def test_request_vector_reuses_only_equal_requests() -> None:
    t = NodeTable()
    a = t.request_vector({api.CPU: 100, api.MEMORY: 500})
    again = t.request_vector({api.MEMORY: 500, api.CPU: 100})  # equal, another dict
    assert again is a
    b = t.request_vector({api.CPU: 200, api.MEMORY: 500})
    assert b is not a
    assert b[t.resource_index[api.CPU]] == 200 and a[t.resource_index[api.CPU]] == 100


def test_request_vector_is_read_only_and_tracks_new_resources() -> None:
    t = NodeTable()
    reqs = {api.CPU: 100, "example.com/gpu": 2, api.PODS: 1}
    vec = t.request_vector(reqs)
    assert vec[t.resource_index["example.com/gpu"]] == 2
    assert api.PODS not in t.resource_index or vec.shape[0] == len(t.resources)
    with pytest.raises(ValueError):
        vec[0] = 1
    reqs["example.com/gpu"] = 4  # the caller's dict changed: not the remembered answer
    assert t.request_vector(reqs)[t.resource_index["example.com/gpu"]] == 4
    np.testing.assert_array_equal(t.request_vector({api.CPU: 100, "example.com/gpu": 2}), vec)
