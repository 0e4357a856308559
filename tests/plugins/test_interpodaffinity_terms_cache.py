"""A Pod's compiled affinity terms are kept per (affinity objects, namespace, labels)
(:func:`pod_terms`): the queue's hint for an assigned Pod's add asks for every pooled Pod's
terms in turn, so a cache of the last Pod only would compile each of them again per event;
the Pods of one template (shallow copies sharing the affinity objects) compile once; a Pod
whose labels or namespace differ is compiled again (``matchLabelKeys`` reads the labels, an
empty ``namespaces`` defaults to the Pod's own)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

from kubesched.api import objects as api
from kubesched.plugins.interpodaffinity import terms
from kubesched.testing import make_pod
from kubesched.testing.builders import affinity_term


def _pod(name: str, app: str) -> api.Pod:
    term = affinity_term("zone", labels={"role": "db"}, match_label_keys=("app",))
    return make_pod(name).labels(app=app).pod_affinity(term).obj()


_fresh_compile = terms._compile
"""The compile itself, kept before :func:`compiled` replaces it."""


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the Pods whose terms are compiled (not found kept), in order."""
    names: list[str] = []

    def counting(pod: api.Pod, aff: object, anti: object) -> terms.PodTerms:
        names.append(pod.name)
        return _fresh_compile(pod, pod.pod_affinity, pod.pod_anti_affinity)

    monkeypatch.setattr(terms, "_compile", counting)
    return names


def test_pods_asked_in_turn_are_compiled_once_each(compiled: list[str]) -> None:
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


def test_pods_of_one_template_share_one_compile(compiled: list[str]) -> None:
    base = _pod("template", "web")
    copies = []
    for i in range(4):
        c = base.shallow_copy()
        c.rename(f"c{i}")
        c.uid = f"uid-{i}"
        c.labels = dict(base.labels)
        copies.append(c)
    first = terms.pod_terms(copies[0])
    assert all(terms.pod_terms(c) is first for c in copies)
    assert compiled == ["c0"]
    other_labels, other_ns = copies[1].shallow_copy(), copies[2].shallow_copy()
    other_labels.labels = {"app": "api"}
    other_ns.namespace = "other"
    for pod in (other_labels, other_ns):  # the answer a fresh compile gives
        assert terms.pod_terms(pod) == _fresh_compile(pod, pod.pod_affinity, pod.pod_anti_affinity)
    assert terms.pod_terms(other_labels) != first
    assert terms.pod_terms(other_ns).required_affinity[0].namespaces == {"other"}
    assert len(compiled) == 3


def test_kept_hashes_match_fresh_terms_and_are_not_pickled() -> None:
    """Terms and matchers keep their hash; one pickled in a process with another string
    hash seed (a parallel worker) still finds, and is found by, the same term here."""
    pod = _pod("p", "web")
    [term] = terms.pod_terms(pod).required_affinity
    fresh, _ = terms.compile_term(pod, pod.pod_affinity.required[0])  # type: ignore[union-attr]
    assert fresh is not term and {term: 1}[fresh] == 1
    m = terms.matcher(term, {}, ())
    assert {m: 1}[terms.matcher(fresh, {}, ())] == 1
    script = (
        "import pickle, sys\n"
        "from kubesched.plugins.interpodaffinity import terms\n"
        "from kubesched.testing import make_pod\n"
        "from kubesched.testing.builders import affinity_term\n"
        "t = affinity_term('zone', labels={'role': 'db'}, match_label_keys=('app',))\n"
        "pod = make_pod('p').labels(app='web').pod_affinity(t).obj()\n"
        "[term] = terms.pod_terms(pod).required_affinity\n"
        "sys.stdout.buffer.write(pickle.dumps((term, terms.matcher(term, {}, ()))))\n"
    )
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, check=True
        ).stdout
        loaded_term, loaded_matcher = pickle.loads(out)
        assert loaded_term == term and hash(loaded_term) == hash(term)
        assert {term: 1}[loaded_term] == 1 and {loaded_matcher: 1}[m] == 1


def test_labels_no_term_reads_do_not_compile_again(compiled: list[str]) -> None:
    base = make_pod("t").labels(app="web").pod_affinity(affinity_term("zone", labels={"a": "b"}))
    pods = [base.obj().shallow_copy() for _ in range(2)]
    pods[1].labels = {"app": "web", "signature": "signature-label-1"}
    first = terms.pod_terms(pods[0])
    for pod in (*pods, pods[0]):
        assert terms.pod_terms(pod) is first
        assert first == _fresh_compile(pod, pod.pod_affinity, pod.pod_anti_affinity)
    assert compiled == ["t"]
