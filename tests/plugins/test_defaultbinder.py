"""DefaultBinder: binds through the handle's API client; failures become Error statuses."""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState, Handle
from kubesched.plugins import defaultbinder as db
from kubesched.testing import make_cluster, make_pod


class FakeApi:
    def __init__(self, fail: str = "") -> None:
        self.fail = fail
        self.bound: list[tuple[str, str]] = []

    def bind(self, pod: api.Pod, node_name: str) -> None:
        if self.fail:
            raise RuntimeError(self.fail)
        self.bound.append((pod.key, node_name))

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        raise AssertionError("not used")


def test_bind_calls_api() -> None:
    fake = FakeApi()
    binder = db.new(None, Handle(make_cluster([]), api=fake))
    status = binder.bind(CycleState(), make_pod("p", "ns").obj(), "node-1")
    assert status.is_success()
    assert fake.bound == [("ns/p", "node-1")]


def test_bind_error_becomes_error_status() -> None:
    fake = FakeApi(fail='pods "p" not found')
    status = db.new(None, Handle(make_cluster([]), api=fake)).bind(
        CycleState(), make_pod("p").obj(), "node-1"
    )
    assert status.code == Code.ERROR
    assert status.reasons == ('pods "p" not found',)


def test_bind_without_api_client() -> None:
    status = db.new(None, Handle(make_cluster([]))).bind(CycleState(), make_pod("p").obj(), "n")
    assert status.code == Code.ERROR
    assert db.NAME == "DefaultBinder"
