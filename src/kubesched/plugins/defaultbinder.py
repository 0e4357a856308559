"""DefaultBinder: binds a Pod by asking the API server (``handle.api.bind``).

Upstream ``defaultbinder/default_binder.go`` creates a ``pods/binding`` subresource and turns
any API error into an Error status whose message is the error's text (``AsStatus(err)``).
Here the API client is whatever the runtime put in ``Handle.api`` (simulated API server, a
test fake, or the live adapter).  Deviation: a handle without an API client gives an Error
status instead of a nil-pointer panic.
"""

from __future__ import annotations

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.interface import SUCCESS, CycleState, Handle, Status, error

NAME = names.DEFAULT_BINDER
ERR_NO_API = "no API client to bind with"


class DefaultBinder:
    """The Bind plugin that writes the binding through the API client."""

    name = NAME

    def __init__(self, args: object | None, handle: Handle) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: api.Pod, node_name: str) -> Status:
        """Bind ``pod`` to ``node_name``; an exception becomes an Error with its text."""
        client = self.handle.api
        if client is None:
            return error(ERR_NO_API)
        try:
            client.bind(pod, node_name)
        except Exception as exc:  # any API failure is reported, not raised (upstream AsStatus)
            return error(str(exc))
        return SUCCESS


def new(args: object | None, handle: Handle) -> DefaultBinder:
    """Factory; DefaultBinder has no args (anything given is ignored, as upstream)."""
    return DefaultBinder(args, handle)
