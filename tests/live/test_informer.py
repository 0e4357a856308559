"""Informers against the fake API server: list + watch, resume, 410 relist, backoff, pages."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kubesched.config.featuregates import FeatureGates, with_settings
from kubesched.live.client import KubeClient, connect
from kubesched.live.informer import (
    ADDED,
    DELETED,
    MODIFIED,
    Delta,
    Informer,
    Kind,
    object_key,
    scheduler_kinds,
)
from tests.live.conftest import FAST, Api, node, pod, wait_for
from tests.live.fakestore import by_plural

PODS = Kind("Pod", "v1", "/api/v1/pods")
GROUPS = Kind("PodGroup", "scheduling.x-k8s.io/v1alpha1", "/apis/example.io/v1/podgroups", True)


class Run:
    """An informer on a thread, its deltas collected."""

    def __init__(self, client: KubeClient, kind: Kind, page_size: int = 500) -> None:
        self.deltas: list[Delta] = []
        self.stop = threading.Event()
        timing = replace(FAST, page_size=page_size)
        self.inf = Informer(client, kind, self.deltas.append, self.stop, timing)
        self.thread = threading.Thread(target=self.inf.run, daemon=True)
        self.thread.start()

    def seen(self) -> list[tuple[str, str]]:
        return [(d.type, object_key(d.new)) for d in list(self.deltas)]

    def close(self, client: KubeClient) -> None:
        self.stop.set()
        deadline = time.monotonic() + 15
        while self.thread.is_alive() and time.monotonic() < deadline:
            client.abort()  # again: a watch may open just after an earlier cut (as the runner does)
            self.thread.join(0.2)
        assert not self.thread.is_alive()


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[KubeClient]:
    c = connect(kubeconfig=str(kubeconfig), qps=0, burst=1)
    yield c
    c.close()


@pytest.fixture
def run(client: KubeClient) -> Iterator[type[Run]]:
    made: list[Run] = []

    class Made(Run):
        def __init__(self, kind: Kind = PODS, page_size: int = 500) -> None:
            super().__init__(client, kind, page_size)
            made.append(self)

    yield Made
    for r in made:
        r.close(client)


def test_list_then_watch_stamps_kind_and_tracks_changes(api: Api, run: type[Run]) -> None:
    api.create(pod("a"))
    r = run()
    wait_for(r.inf.synced.is_set)
    assert r.seen() == [(ADDED, "default/a")]
    assert (r.deltas[0].new["kind"], r.deltas[0].new["apiVersion"]) == ("Pod", "v1")
    api.create(pod("b"))
    api.store.bind("default", "a", {"target": {"name": "n1"}}, "t", 0.0)
    api.store.delete(by_plural("pods"), "default", "b")
    wait_for(lambda: len(r.deltas) == 4)
    assert r.seen()[1:] == [(ADDED, "default/b"), (MODIFIED, "default/a"), (DELETED, "default/b")]
    modified = r.deltas[2]
    assert modified.old is not None and not modified.old["spec"].get("nodeName")
    assert modified.new["spec"]["nodeName"] == "n1"
    assert set(r.inf.store) == {"default/a"}


def test_dropped_watch_resumes_without_relisting(api: Api, run: type[Run]) -> None:
    r = run()
    wait_for(r.inf.synced.is_set)
    wait_for(lambda: api.store.stats.requests["GET pods"] == 2)  # list + watch
    api.store.drop_watches()
    api.create(pod("after-drop"))
    wait_for(lambda: r.seen() == [(ADDED, "default/after-drop")])
    assert r.inf.lists == 1


def test_gone_relists_and_emits_only_the_difference(api: Api, run: type[Run]) -> None:
    api.create(pod("kept"))
    api.create(pod("removed"))
    r = run()
    wait_for(lambda: len(r.deltas) == 2)
    wait_for(lambda: api.store.stats.requests["GET pods"] == 2)
    # While the watch is down, one Pod goes away, one arrives, and history is compacted
    # (at one instant for the server's watches: otherwise one resumed in between streams the
    # changes, no relist is needed and none comes).
    with api.store.outage():
        api.store.delete(by_plural("pods"), "default", "removed")
        api.create(pod("new"))
    wait_for(lambda: r.inf.lists == 2)
    wait_for(lambda: len(r.deltas) == 4)
    assert sorted(r.seen()[2:]) == [(ADDED, "default/new"), (DELETED, "default/removed")]
    assert set(r.inf.store) == {"default/kept", "default/new"}


def test_server_errors_back_off_then_succeed(api: Api, run: type[Run]) -> None:
    api.server.fail(r"GET /api/v1/pods\?limit", 500, times=3)
    api.create(pod("a"))
    r = run()
    wait_for(r.inf.synced.is_set, timeout=15)
    assert r.seen() == [(ADDED, "default/a")]
    assert api.store.stats.requests["GET pods"] >= 1


def test_pages_are_followed(api: Api, run: type[Run]) -> None:
    api.server.watch_cache = False  # the server pages even a list at resourceVersion=0
    for i in range(5):
        api.create(node(f"n{i}"))
    r = run(Kind("Node", "v1", "/api/v1/nodes"), page_size=2)
    wait_for(r.inf.synced.is_set)
    assert r.seen() == [(ADDED, f"n{i}") for i in range(5)]
    assert api.store.stats.requests["GET nodes"] >= 3


def test_the_first_list_is_one_request_to_the_watch_cache_relists_are_paged(
    api: Api, run: type[Run]
) -> None:
    for i in range(5):
        api.create(node(f"n{i}"))
    r = run(Kind("Node", "v1", "/api/v1/nodes"), page_size=2)
    wait_for(r.inf.synced.is_set)
    wait_for(lambda: api.store.stats.requests["GET nodes"] == 2)  # resourceVersion=0, watch
    time.sleep(0.2)
    assert api.store.stats.requests["GET nodes"] == 2 and len(r.inf.store) == 5
    with api.store.outage():  # the watch resumes at a compacted version: 410, a relist
        api.create(node("n5"))
    wait_for(lambda: r.inf.lists == 2)
    assert r.seen() == [(ADDED, f"n{i}") for i in range(6)]
    wait_for(lambda: api.store.stats.requests["GET nodes"] >= 2 + 1 + 3)  # watch, 3 pages


def test_a_missing_optional_kind_is_synced_and_empty(api: Api, run: type[Run]) -> None:
    r = run(GROUPS)
    wait_for(r.inf.synced.is_set)
    assert r.inf.absent and r.deltas == []


def test_a_missing_optional_kind_is_said_once_and_rechecked_quietly(
    api: Api, run: type[Run], caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 34: without the PodGroup / ElasticQuota CRDs, live mode logged a two-line 404
    warning every 30 s.  It says so once; the re-checks (FAST: every backoff_max) are quiet."""
    caplog.set_level(logging.DEBUG, logger="kubesched.live.informer")
    r = run(GROUPS)
    wait_for(r.inf.synced.is_set)
    wait_for(lambda: sum("still not served" in m for m in caplog.messages) >= 3, timeout=20)
    loud = [rec for rec in caplog.records if rec.levelno >= logging.INFO]
    assert len(loud) == 1 and "is not served by this API server" in loud[0].getMessage()
    assert "checking again every" in loud[0].getMessage()


VERSIONED = Kind(
    "PodGroup",
    "scheduling.x-k8s.io/v1beta9",
    "/apis/scheduling.x-k8s.io/v1beta9/podgroups",
    optional=True,
    versions=("v1beta9", "v1alpha1"),
)
"""A kind of several versions (as the Workload API's), the first one not served here."""


def test_a_kind_of_several_versions_is_listed_in_the_one_the_server_serves(
    api: Api, run: type[Run]
) -> None:
    """Discovery (``GET /apis/G/V``) chooses the version: the fake serves ``v1alpha1`` only."""
    api.store.create(
        by_plural("podgroups", "scheduling.x-k8s.io"),
        "default",
        {"metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 2}},
    )
    r = run(VERSIONED)
    wait_for(lambda: r.deltas)
    assert not r.inf.absent
    assert r.inf.kind.path == "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
    assert r.deltas[0].new["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    api.store.create(
        by_plural("podgroups", "scheduling.x-k8s.io"),
        "default",
        {"metadata": {"name": "h", "namespace": "default"}, "spec": {"minMember": 1}},
    )
    wait_for(lambda: ("ADDED", "default/h") in r.seen())  # watched in that version too


def test_a_kind_served_in_none_of_its_versions_is_absent_and_empty(
    api: Api, run: type[Run], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kubesched.live.informer")
    r = run(replace(VERSIONED, versions=("v1beta9", "v2")))
    wait_for(r.inf.synced.is_set)
    assert r.inf.absent and r.deltas == []
    wait_for(lambda: any("in none of v1beta9, v2" in m for m in caplog.messages))


@pytest.mark.parametrize(
    ("release", "gate", "want"),
    [
        ("1.34", True, None),
        ("1.37", False, None),
        ("1.35", True, ("Workload", ("v1alpha1",))),
        ("1.36", True, ("PodGroup", ("v1alpha2",))),
        ("1.37", True, ("PodGroup", ("v1beta1", "v1alpha3"))),
    ],
)
def test_a_release_watches_the_workload_api_kind_its_scheduler_reads(
    release: str, gate: bool, want: tuple[str, tuple[str, ...]] | None
) -> None:
    """Upstream's informers: v1.35 Workloads, v1.36+ PodGroups, in the versions the release
    serves them (the first, upstream's, named by ``path``); none with GenericWorkload off."""
    gates = with_settings(release, {"GenericWorkload": gate}) if release != "1.34" else None
    kinds = scheduler_kinds(gates if gates is not None else FeatureGates("1.34"))
    extra = [k for k in kinds if k.versions]
    assert kinds[-1].kind == "Pod"
    if want is None:
        assert extra == []
        return
    [k] = extra
    assert (k.kind, k.versions) == want
    assert k.path == f"/apis/scheduling.k8s.io/{want[1][0]}/{want[0].lower()}s"


def test_a_pod_informer_drops_managed_fields_its_texts_keep_them(
    api: Api, client: KubeClient
) -> None:
    """As upstream's Pod informer (``newPodInformer``'s transform): the decoded Pods, listed
    and watched, come without ``metadata.managedFields``; the JSON text handed on with a
    watched Pod is the text as received."""
    fields = [{"manager": "m", "operation": "Update", "fieldsV1": {"f:spec": {"f:x": {}}}}]

    def with_fields(name: str) -> dict[str, object]:
        manifest = pod(name)
        manifest["metadata"]["managedFields"] = fields
        return manifest

    api.create(with_fields("listed"))
    deltas: list[Delta] = []
    stop = threading.Event()
    inf = Informer(client, PODS, deltas.append, stop, FAST, texts=True, trim_managed_fields=True)
    thread = threading.Thread(target=inf.run, daemon=True)
    thread.start()
    try:
        wait_for(inf.synced.is_set)
        api.create(with_fields("watched"))
        wait_for(lambda: len(deltas) == 2)
    finally:
        stop.set()
        while thread.is_alive():
            client.abort()
            thread.join(0.2)
    assert [object_key(d.new) for d in deltas] == ["default/listed", "default/watched"]
    for d in deltas:
        assert "managedFields" not in d.new["metadata"]
        assert d.new["metadata"]["name"] in {"listed", "watched"}
    assert deltas[1].text is not None and b'"managedFields"' in bytes(deltas[1].text)
    assert all("managedFields" not in o["metadata"] for o in inf.store.values())
