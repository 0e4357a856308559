"""Fixtures for recording tests: live mode's fake API server (``tests.live``) and a recorder
running on a thread against it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubesched.live.client import KubeClient, connect
from kubesched.record.recorder import Recorder, Summary, prepare_directory
from tests.live.conftest import FAST, api, kubeconfig, server, wait_for

__all__ = ["api", "kubeconfig", "server"]

AGENT = "kubesched-test (recorder)"


class Session:
    """A recorder on a thread, started and waited for until its snapshot is written."""

    def __init__(self, kubeconfig: Path, out: Path, duration: float | None) -> None:
        self.client: KubeClient = connect(kubeconfig=str(kubeconfig), user_agent=AGENT)
        self.out = prepare_directory(str(out))
        self.recorder = Recorder(self.client, self.out, timing=FAST)
        self.summary: Summary | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(duration,), daemon=True)
        self.thread.start()
        wait_for(lambda: self.recorder.progress().elapsed is not None or self.error)
        assert self.error is None, self.error

    def _run(self, duration: float | None) -> None:
        try:
            self.summary = self.recorder.run(duration)
        except BaseException as e:
            self.error = e

    def stop(self) -> Summary:
        self.recorder.stop()
        self.thread.join(15)
        assert not self.thread.is_alive(), "the recorder did not stop"
        self.client.close()
        assert self.error is None, self.error
        assert self.summary is not None
        return self.summary

    def events(self) -> list[dict[str, object]]:
        import json

        text = (self.out / "events.jsonl").read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def record(kubeconfig: Path, tmp_path: Path) -> Iterator[Callable[..., Session]]:
    made: list[Session] = []

    def start(duration: float | None = None, name: str = "rec") -> Session:
        s = Session(kubeconfig, tmp_path / name, duration)
        made.append(s)
        return s

    yield start
    for s in made:
        if s.thread.is_alive():
            s.recorder.stop()
            s.thread.join(15)
        s.client.close()
