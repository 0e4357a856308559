"""``LiveApi.bind`` settling a bind whose outcome is unknown (issue 17), call by call, over a
scripted client: a timeout is never taken for a failure until a re-GET or a re-POST says so."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.pods import parse_pod
from kubesched.live.binder import LiveApi, NotLeaderError
from kubesched.live.client import ApiError

TIMEOUT = ApiError(0, "ReadTimeoutError: read timed out")


class Script:
    """Answers (dicts) or errors, in order; records each ``METHOD path``."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[str] = []

    def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        self.calls.append(f"{method} {path.rsplit('/', 1)[-1]}")
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)


class Recorder:
    def __init__(self) -> None:
        self.scheduled: list[tuple[str, str]] = []

    def pod_scheduled(self, pod: Any, node: str) -> None:
        self.scheduled.append((pod.key, node))


def _pod() -> Any:
    return parse_pod(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "u1"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    )


def _got(node: str = "", uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"name": "p", "uid": uid}, "spec": {"nodeName": node} if node else {}}


def _api(script: Script, **kw: Any) -> tuple[LiveApi, Recorder]:
    rec = Recorder()
    return LiveApi(script, rec, bind_timeout=0.1, **kw), rec  # type: ignore[arg-type]


def test_a_timed_out_bind_that_was_written_is_a_success() -> None:
    script = Script(TIMEOUT, _got("n1"))
    api, rec = _api(script)
    api.bind(_pod(), "n1")
    assert script.calls == ["POST binding", "GET p"]
    assert (api.binds, api.bind_errors, api.unknown_binds) == (1, 0, 1)
    assert rec.scheduled == [("default/p", "n1")]


def test_still_unbound_it_is_posted_again() -> None:
    script = Script(TIMEOUT, _got(), {})
    api, _ = _api(script)
    api.bind(_pod(), "n1")
    assert script.calls == ["POST binding", "GET p", "POST binding"]


def test_a_conflict_on_the_second_post_is_read_back() -> None:
    conflict = ApiError(409, "pod p is already assigned to node n1", "Conflict")
    script = Script(TIMEOUT, _got(), conflict, _got("n1"))
    api, _ = _api(script)
    api.bind(_pod(), "n1")
    assert script.calls == ["POST binding", "GET p", "POST binding", "GET p"]
    assert api.binds == 1


@pytest.mark.parametrize(
    ("got", "code"),
    [(_got("n2"), 409), (_got(uid="u2"), 404), (ApiError(404, "gone", "NotFound"), 404)],
)
def test_decided_otherwise_it_fails(got: Any, code: int) -> None:
    api, rec = _api(Script(TIMEOUT, got))
    with pytest.raises(ApiError) as e:
        api.bind(_pod(), "n1")
    assert e.value.code == code
    assert (api.binds, api.bind_errors) == (0, 1) and rec.scheduled == []


def test_a_definite_error_fails_at_once() -> None:
    script = Script(ApiError(500, "boom"))
    api, _ = _api(script)
    with pytest.raises(ApiError):
        api.bind(_pod(), "n1")
    assert script.calls == ["POST binding"] and api.unknown_binds == 0


def test_without_answers_it_gives_up_after_settle_seconds() -> None:
    api, _ = _api(Script(*[TIMEOUT] * 50), settle_seconds=0.05)
    with pytest.raises(ApiError, match="still unknown"):
        api.bind(_pod(), "n1")


def test_a_replica_that_stops_leading_abandons_the_settling() -> None:
    leading = iter([True, False])
    api, _ = _api(Script(TIMEOUT), guard=lambda: next(leading))
    with pytest.raises(NotLeaderError):
        api.bind(_pod(), "n1")
    assert api.bind_errors == 1
