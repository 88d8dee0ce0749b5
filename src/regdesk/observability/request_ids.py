"""The id of the request being answered: taken from the client's `X-Request-ID` when it is
short and plain, else made; sent back in the response's `X-Request-ID`, written in JSON log
lines and in the audit events the request records.

It lives in a contextvar set by the outermost ASGI layer (observability/observed.py): the
request's task and everything it starts (worker threads included: anyio copies the context)
read the same one; code outside a request (the outbox's threads, a command) reads None.
"""

from __future__ import annotations

import os
import re
import threading
from contextvars import ContextVar

HEADER = "X-Request-ID"
# Short and plain: it is echoed in a header, written in logs and stored (audit_events).
_SAFE = re.compile(rb"[A-Za-z0-9._-]{1,64}")


class RequestContext:
    """The request being answered: its id, and time.perf_counter() when it arrived."""

    __slots__ = ("id", "started")

    def __init__(self, id: str, started: float) -> None:  # a plain class: made per request
        self.id = id
        self.started = started


current: ContextVar[RequestContext | None] = ContextVar("regdesk_request", default=None)


def request_id() -> str | None:
    """The id of the request this code runs for; None outside a request."""
    context = current.get()
    return None if context is None else context.id


class _NewIds:
    """128 random bits in hex, as a uuid4's hex (uuid.uuid4() costs ten times as much), read
    from the operating system's random source 256 ids at a time: one system call per id
    (secrets.token_hex) was 3 % of a record read's time. A forked child reads its own."""

    _BYTES = 16 * 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hex = ""
        self._at = 0
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._hex, self._at = "", 0

    def __call__(self) -> str:
        with self._lock:
            if self._at >= len(self._hex):
                self._hex, self._at = os.urandom(self._BYTES).hex(), 0
            at = self._at
            self._at = at + 32
        return self._hex[at : at + 32]


new_id = _NewIds()


def incoming_or_new(given: bytes | None) -> str:
    """The client's id when it is safe to echo and store; else a new one (`new_id`)."""
    if given is not None and _SAFE.fullmatch(given):
        return given.decode("ascii")
    return new_id()
