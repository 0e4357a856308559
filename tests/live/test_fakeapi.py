"""The test API server is faithful where kubesched relies on it: proven with the real kubectl
(list, apply, label, delete, watch, Retry-After, error Status) and with raw HTTP for what
kubectl does not exercise (410 on compacted watches, the binding subresource)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.live.conftest import Api, kubectl, needs_kubectl, pod, wait_for
from tests.live.fakeapi import FakeApiServer
from tests.live.fakestore import by_plural

POD_YAML = """apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  schedulerName: kubesched
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]
"""


def http(server: FakeApiServer, method: str, path: str, body: object = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.url + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


@needs_kubectl
def test_kubectl_apply_get_label_delete(server: FakeApiServer, api: Api) -> None:
    assert "created" in kubectl(server, "apply", "--validate=false", "-f", "-", stdin=POD_YAML)
    assert "unchanged" in kubectl(server, "apply", "--validate=false", "-f", "-", stdin=POD_YAML)
    listed = json.loads(kubectl(server, "get", "pods", "-o", "json"))
    (item,) = listed["items"]
    assert item["metadata"]["uid"] and item["metadata"]["resourceVersion"]
    assert item["spec"]["schedulerName"] == "kubesched"
    kubectl(server, "label", "pod", "web", "tier=front")
    assert kubectl(server, "get", "pods", "-l", "tier=front", "-o", "name").split() == ["pod/web"]
    assert kubectl(server, "get", "pods", "-l", "tier=back", "-o", "name").strip() == ""
    table = kubectl(server, "get", "pods")
    assert table.split("\n")[0].split() == ["NAME", "STATUS", "NODE"]
    assert "<none>" in table
    assert '"web" deleted' in kubectl(server, "delete", "pod", "web", "--wait=false")
    assert kubectl(server, "get", "pods", "-o", "name").strip() == ""


@needs_kubectl
def test_kubectl_sees_a_binding_and_errors(server: FakeApiServer, api: Api) -> None:
    api.create(pod("p"))
    code, answer = http(
        server,
        "POST",
        "/api/v1/namespaces/default/pods/p/binding",
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "p"},
            "target": {"kind": "Node", "name": "n1"},
        },
    )
    assert (code, answer["kind"], answer["status"]) == (201, "Status", "Success")
    assert kubectl(server, "get", "pod", "p", "-o", "jsonpath={.spec.nodeName}") == "n1"
    with pytest.raises(subprocess.CalledProcessError) as err:
        kubectl(server, "get", "pod", "missing")
    assert 'pods "missing" not found' in err.value.stderr
    with pytest.raises(subprocess.CalledProcessError) as err:
        kubectl(server, "create", "--validate=false", "-f", "-", stdin=POD_YAML.replace("web", "p"))
    assert "AlreadyExists" in err.value.stderr


@needs_kubectl
def test_kubectl_honours_retry_after_and_reports_500(server: FakeApiServer, api: Api) -> None:
    api.create(pod("p"))
    server.fail(r"^GET /api/v1/namespaces/default/pods\?", 429, times=1, retry_after=1)
    assert kubectl(server, "get", "pods", "-o", "name").split() == ["pod/p"]
    server.fail(r"^GET /api/v1/namespaces/default/pods/p", 500, times=20)
    with pytest.raises(subprocess.CalledProcessError) as err:
        kubectl(server, "get", "pod", "p")
    assert "injected 500" in err.value.stderr


@needs_kubectl
def test_kubectl_watch_reads_the_chunked_stream(server: FakeApiServer, api: Api) -> None:
    assert server.url
    proc = subprocess.Popen(
        ["kubectl", "--server", server.url, "get", "pods", "--watch-only", "-o", "name"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: server.store.stats.requests["GET pods"] >= 1)
        api.create(pod("late"))
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "pod/late"
    finally:
        proc.kill()
        proc.wait(5)


def test_an_outage_is_one_instant_for_watches(server: FakeApiServer) -> None:
    """Issue 31 (a flaky relist test): a watch resumed in the middle of an outage must not
    stream the outage's changes -- it waits for the outage to end and gets 410 Gone.  With
    ``drop_watches()``, the changes and ``compact()`` in turn, it got the Pod as ADDED."""
    _, listed = http(server, "GET", "/api/v1/pods")
    rv = listed["metadata"]["resourceVersion"]
    got: list[dict] = []

    def resume() -> None:
        url = f"{server.url}/api/v1/pods?watch=true&resourceVersion={rv}"
        with urllib.request.urlopen(url, timeout=5) as r:
            got.append(json.loads(r.readline()))

    with server.store.outage():
        server.store.create(by_plural("pods"), "default", pod("during"))
        t = threading.Thread(target=resume, daemon=True)
        t.start()
        time.sleep(0.3)  # the watch is opened while the outage lasts
    t.join(5)
    ((event,),) = [got]
    assert event["type"] == "ERROR" and event["object"]["code"] == 410


def test_watch_from_a_compacted_version_is_410_in_the_stream(server: FakeApiServer) -> None:
    server.store.compact()
    with urllib.request.urlopen(
        server.url + "/api/v1/pods?watch=true&resourceVersion=1", timeout=5
    ) as r:
        event = json.loads(r.readline())
    assert event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")


@pytest.mark.parametrize(
    ("first", "second", "code"),
    [
        ({"target": {"name": "n1"}}, {"target": {"name": "n2"}}, 409),  # already assigned
        ({"metadata": {"uid": "other"}, "target": {"name": "n1"}}, None, 409),  # UID changed
    ],
)
def test_binding_conflicts(
    server: FakeApiServer, api: Api, first: dict, second: dict | None, code: int
) -> None:
    api.create(pod("p"))
    path = "/api/v1/namespaces/default/pods/p/binding"
    got, _ = http(server, "POST", path, first)
    if second is not None:
        assert got == 201
        got, answer = http(server, "POST", path, second)
    else:
        answer = _
    assert got == code and answer["reason"] == "Conflict"
    assert server.store.stats.bind_conflicts == 1


def test_update_with_a_stale_resource_version_is_409(server: FakeApiServer, api: Api) -> None:
    obj = api.create(pod("p"))
    code, _ = http(server, "PUT", "/api/v1/namespaces/default/pods/p", obj)
    assert code == 200
    code, answer = http(server, "PUT", "/api/v1/namespaces/default/pods/p", obj)
    assert (code, answer["reason"]) == (409, "Conflict")


def test_list_pages_with_continue(server: FakeApiServer, api: Api) -> None:
    for i in range(5):
        api.create(pod(f"p{i}"))
    names, token = [], ""
    while True:
        code, page = http(server, "GET", f"/api/v1/pods?limit=2&continue={token}")
        assert code == 200 and "kind" not in page["items"][0]  # list items carry no kind
        names += [o["metadata"]["name"] for o in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert names == [f"p{i}" for i in range(5)]


def test_a_list_at_version_0_is_whole_and_each_object_current(
    server: FakeApiServer, api: Api
) -> None:
    for i in range(5):
        api.create(pod(f"p{i}"))
    code, page = http(server, "GET", "/api/v1/pods?limit=2&resourceVersion=0")
    assert code == 200 and len(page["items"]) == 5 and "continue" not in page["metadata"]
    api.store.bind("default", "p3", {"target": {"name": "n1"}}, "t", 0.0)  # a new encoding
    _, page = http(server, "GET", "/api/v1/pods?resourceVersion=0")
    (p3,) = [o for o in page["items"] if o["metadata"]["name"] == "p3"]
    current = api.pod("p3")
    assert p3["spec"]["nodeName"] == "n1" and p3["metadata"] == current["metadata"]
    server.watch_cache = False  # kube-apiserver --watch-cache=false pages it
    _, page = http(server, "GET", "/api/v1/pods?limit=2&resourceVersion=0")
    assert len(page["items"]) == 2 and page["metadata"]["continue"]
