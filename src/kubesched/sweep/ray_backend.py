"""Sweep tasks as Ray tasks on an existing Ray cluster (``--ray-address`` / ``RAY_ADDRESS``).

The only module that imports Ray, lazily (``pip install kubesched[ray]``).  Each
:class:`~kubesched.sweep.spec.Task` becomes one Ray task running
:func:`kubesched.sweep.tasks.run_task`, with one CPU; results come back in submission order,
so a sweep gives the same rows on Ray as in the local pool.  Every node of the cluster needs
kubesched installed in the Python environment its workers run (the same version as here).

Ray's defaults are kept except two, set in this process only when the caller left them unset:

- ``RAY_AUTH_MODE=token`` when ``~/.ray/auth_token`` exists (a cluster started by
  ``ray start`` with token authentication, its default, refuses clients without the token);
- for a loopback address (``127.0.0.1:PORT``, ``localhost:PORT``),
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: Ray otherwise rewrites a loopback address to the
  machine's network address, so a head started on loopback (``ray start --head
  --node-ip-address=127.0.0.1`` with the same variable set) could not be reached and no
  traffic would stay on loopback.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kubesched.sweep.spec import Task
from kubesched.sweep.tasks import run_task

INSTALL_HINT = "Ray is not installed: pip install 'kubesched[ray]'"
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class RayUnavailable(RuntimeError):
    """Ray is missing or the cluster cannot be reached."""


def is_loopback(address: str) -> bool:
    """Whether ``address`` (``HOST:PORT``, optionally ``ray://``) names this machine's loopback."""
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host == "localhost" or host == "::1" or host.startswith("127.")


def available() -> bool:
    """Whether Ray can be imported here."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def run_tasks(
    tasks: Sequence[Task],
    address: str,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``tasks`` on the Ray cluster at ``address``; rows in task order."""
    # Ray reads these when it is first imported: set them before.
    if "RAY_AUTH_MODE" not in os.environ and (Path.home() / ".ray" / "auth_token").exists():
        os.environ["RAY_AUTH_MODE"] = "token"
    loopback = is_loopback(address)
    if loopback:
        os.environ.setdefault(LOOPBACK_ENV, "0")
    try:
        import ray
    except ImportError as e:
        raise RayUnavailable(INSTALL_HINT) from e
    started_here = not ray.is_initialized()
    if started_here:
        try:
            extra: dict[str, Any] = {"_node_ip_address": "127.0.0.1"} if loopback else {}
            ray.init(address=address, log_to_driver=False, include_dashboard=False, **extra)
        except (ConnectionError, RuntimeError) as e:
            raise RayUnavailable(f"cannot connect to the Ray cluster at {address}: {e}") from e
    try:
        remote = ray.remote(num_cpus=1)(run_task)
        refs = [remote.remote(t) for t in tasks]
        index = {ref: i for i, ref in enumerate(refs)}
        rows: list[dict[str, Any] | None] = [None] * len(refs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                rows[index[ref]] = ray.get(ref)
            if progress is not None:
                progress(len(refs) - len(pending), len(refs))
        return [r for r in rows if r is not None]
    finally:
        if started_here:
            ray.shutdown()
