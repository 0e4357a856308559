"""A Pod's compiled affinity terms are kept per Pod (:func:`pod_terms`): the queue's hint for
an assigned Pod's add asks for every pooled Pod's terms in turn, so a cache of the last Pod
only would compile each of them again per event; a Pod whose labels changed is compiled
again (``matchLabelKeys`` reads them)."""

from __future__ import annotations

import pytest

from kubesched.api import objects as api
from kubesched.plugins.interpodaffinity import terms
from kubesched.testing import make_pod
from kubesched.testing.builders import affinity_term


def _pod(name: str, app: str) -> api.Pod:
    term = affinity_term("zone", labels={"role": "db"}, match_label_keys=("app",))
    return make_pod(name).labels(app=app).pod_affinity(term).obj()


def test_pods_asked_in_turn_are_compiled_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    compile_ = terms._compile

    def counting(pod: api.Pod, aff: object, anti: object) -> terms.PodTerms:
        compiled.append(pod.name)
        return compile_(pod, pod.pod_affinity, pod.pod_anti_affinity)

    monkeypatch.setattr(terms, "_compile", counting)
    pods = [_pod(f"p{i}", "web") for i in range(3)]
    first = [terms.pod_terms(p) for p in pods]
    for _ in range(3):  # three events, each walking the pool
        assert [terms.pod_terms(p) for p in pods] == first
    assert compiled == ["p0", "p1", "p2"]


def test_changed_labels_are_compiled_again() -> None:
    pod = _pod("p", "web")
    before = terms.pod_terms(pod)
    assert before.required_affinity[0].selector is not None
    pod.labels = {"app": "api"}
    after = terms.pod_terms(pod)
    assert after != before  # matchLabelKeys took the new value
    assert terms.pod_terms(pod) is after
