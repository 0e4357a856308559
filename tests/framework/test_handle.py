"""The typed Handle: named services by typed key, event listeners by what they implement."""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.framework.interface import Handle, ServiceKey
from kubesched.state.cache import ClusterState

DOUBLER: ServiceKey[object] = ServiceKey("test/doubler")


def test_services_by_typed_key() -> None:
    handle = Handle(ClusterState())
    assert handle.services.get(DOUBLER) is None
    service = object()
    handle.services.provide(DOUBLER, service)
    assert handle.services.get(DOUBLER) is service
    assert handle.services.get(ServiceKey("test/doubler")) is None  # keys, not names


def test_listeners_hear_only_what_they_implement_in_order() -> None:
    heard: list[str] = []

    class Adds:
        def on_pod_add(self, pod: api.Pod) -> None:
            heard.append(f"adds:{pod.name}")

    class Everything(Adds):
        def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
            heard.append(f"update:{new.name}")

        def on_pod_delete(self, pod: api.Pod) -> None:
            heard.append(f"delete:{pod.name}")

        def on_object(self, obj: object, deleted: bool) -> None:
            heard.append(f"object:{deleted}")

    handle = Handle(ClusterState())
    handle.add_event_handler(Everything())
    handle.add_event_handler(Adds())
    handle.add_event_handler(object())  # hears nothing
    pod = api.Pod("p")
    for hear in handle.listeners["on_pod_add"]:
        hear(pod)
    for hear in handle.listeners["on_pod_update"]:
        hear(pod, pod)
    for hear in handle.listeners["on_object"]:
        hear(pod, True)
    assert heard == ["adds:p", "adds:p", "update:p", "object:True"]
    assert len(handle.event_handlers) == 3
