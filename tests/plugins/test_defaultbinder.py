"""DefaultBinder: binds through the handle's API client; failures become Error statuses."""

from __future__ import annotations

from kubesched.framework.interface import Code, CycleState, Handle
from kubesched.plugins import defaultbinder as db
from kubesched.testing import FakeApi, make_cluster, make_pod


def test_bind_calls_api() -> None:
    fake = FakeApi()
    binder = db.new(None, Handle(make_cluster([]), api=fake))
    status = binder.bind(CycleState(), make_pod("p", "ns").obj(), "node-1")
    assert status.is_success()
    assert fake.bound == [("ns/p", "node-1")]


def test_bind_error_becomes_error_status() -> None:
    fake = FakeApi(fail_binds=True, bind_error='pods "p" not found')
    status = db.new(None, Handle(make_cluster([]), api=fake)).bind(
        CycleState(), make_pod("p").obj(), "node-1"
    )
    assert status.code == Code.ERROR
    assert status.reasons == ('pods "p" not found',)


def test_bind_without_api_client() -> None:
    status = db.new(None, Handle(make_cluster([]))).bind(CycleState(), make_pod("p").obj(), "n")
    assert status.code == Code.ERROR
    assert db.NAME == "DefaultBinder"
