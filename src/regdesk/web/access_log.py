"""The access log of `regdesk serve`: a line for each request answered, as uvicorn's own access
log writes it, without the secret some addresses carry: the token of a mailed link
(/password/reset/<token>, accounts/password_pages.py), and the value of a query parameter that
holds a token or a secret (`?id_token_hint=`, a careless client's `?access_token=`), are
written as `...`, so that a copy of the log opens no one's account. REGDESK_LOG_FORMAT=json
writes the same lines as JSON objects (observability/logs.py).

The log is on by default, so it must be cheap. The outermost layer notes each answer as it
starts (observability/observed.py): a tuple of what the line needs, handed to a queue; no log
record, no lookup of the caller, no formatting on the event loop. A thread of its own, waking
at most every GATHER_SECONDS, makes the lines of whatever has gathered and writes them in one
write (`OffTheLoop`). Lines still queued are written when the server stops; a killed process
loses the few it had not written yet. uvicorn's own access log is off (cli/serve.py): this one
writes its lines instead, the same lines (tests/web/test_access_log.py holds them equal).
"""

from __future__ import annotations

import atexit
import copy
import logging
import queue
import re
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, Generic, TextIO, TypeVar
from urllib.parse import quote

from starlette.types import Scope
from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter

from regdesk.observability.logs import ACCESS_LOGGER, JsonLines, RequestStamped, json_line
from regdesk.observability.request_ids import RequestContext

_LINK_TOKEN = re.compile(r"(/password/reset/)[^/?#&\s]+")


# Query parameters whose value is a credential, here or in the OAuth and OpenID specifications.
_SECRET_QUERY = re.compile(
    r"([?&](?:access_token|refresh_token|id_token|id_token_hint|token|code|client_secret"
    r"|password|secret)=)[^&#\s]*",
    re.IGNORECASE,
)


# Each pattern below is tried only on a line it could change (one holding the literal it needs):
# scanning every line with both took 5 µs of the 8 a line cost to make, which the log's thread
# took from the event loop (a line now costs 2 µs: docs/development/performance.md).


def hide_link_tokens(path: str) -> str:
    return _LINK_TOKEN.sub(r"\1...", path) if "/password/reset/" in path else path


def hide_secrets(path: str) -> str:
    """A request's path and query as the log may keep them: link tokens and secret values out."""
    path = hide_link_tokens(path)
    return _SECRET_QUERY.sub(r"\1...", path) if "=" in path else path


BATCH = 1024  # lines at most in one write
# How long the writer lets lines gather after the first one. Waking it for every line (a
# thread switch and a write per request) cost the event loop a fifth of its time under load;
# a line now reaches the output at most this late.
GATHER_SECONDS = 0.05

T = TypeVar("T")


class OffTheLoop(Generic[T]):
    """Items the event loop hands over (`put`: a queue's put, nothing more), made into lines
    (`line`) and written in batches by a thread of its own, to `stream` or, by default, the
    standard output as it is when the lines are written."""

    def __init__(self, line: Callable[[T], str], stream: TextIO | None = None) -> None:
        self._line = line
        self._stream = stream
        self._items: queue.SimpleQueue[T | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="access-log", daemon=True)
        self._writer.start()
        atexit.register(self.close)  # uvicorn's workers end without logging.shutdown

    def put(self, item: T) -> None:
        self._items.put(item)

    def _write(self) -> None:
        while True:
            batch: list[T | None] = [self._items.get()]
            if batch[0] is not None:
                time.sleep(GATHER_SECONDS)
            while len(batch) < BATCH and not self._items.empty():
                batch.append(self._items.get())
            lines = [self._made(item) for item in batch if item is not None]
            if lines:
                try:
                    stream = self._stream or sys.stdout
                    stream.write("".join(lines))
                    stream.flush()
                except (OSError, ValueError):  # the output went away: the lines with it
                    pass
            if None in batch:
                return

    def _made(self, item: T) -> str:
        try:
            return self._line(item) + "\n"
        except Exception:  # a bad item costs its line, never the log
            return ""

    def close(self) -> None:
        """Every queued line written, then the thread ended (once; again is harmless)."""
        if self._writer.is_alive():
            self._items.put(None)
            self._writer.join(timeout=5)


class LinesOffTheLoop(logging.Handler):
    """A logging handler whose `emit` only queues the record; the lines are formatted and
    written off the event loop (`OffTheLoop`): the service's own lines in JSON."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self._lines: OffTheLoop[logging.LogRecord] = OffTheLoop(self.format, stream)

    def emit(self, record: logging.LogRecord) -> None:
        self._lines.put(record)

    def close(self) -> None:
        self._lines.close()
        super().close()


# What the line of an answer needs, noted on the event loop: the time, the client's address
# (host, port), the method, the path, the query string, the HTTP version, the status, the
# request's id and the seconds since it arrived.
Answer = tuple[float, Any, str, str, bytes, str, int, str, float]
_MESSAGE = '%s - "%s %s HTTP/%s" %d'  # uvicorn's access line (protocols/http)


class AccessLines:
    """The access log: `note` is called by the outermost layer as each answer starts, with
    the request's scope (ProxyHeadersMiddleware, when proxies are trusted, has put the real
    client there by then); the lines are made and written off the loop. `log_format` is
    REGDESK_LOG_FORMAT: `text` (uvicorn's line) or `json`."""

    def __init__(self, log_format: str = "text", stream: TextIO | None = None) -> None:
        self._json = log_format == "json"
        # uvicorn's formatter, for the colours of a terminal (it asks the standard output, as
        # here); a file or a pipe gets plain lines, made without it (`plain_line`).
        self._formatter = AccessFormatter(LOGGING_CONFIG["formatters"]["access"]["fmt"])
        self._lines: OffTheLoop[Answer] = OffTheLoop(self._line, stream)

    def note(self, scope: Scope, status: int, context: RequestContext) -> None:
        self._lines.put(
            (
                time.time(),
                scope.get("client"),
                scope["method"],
                scope["path"],
                scope["query_string"],
                scope["http_version"],
                status,
                context.id,
                time.perf_counter() - context.started,
            )
        )

    def close(self) -> None:
        self._lines.close()

    def _line(self, answer: Answer) -> str:
        created, client, method, path, query, version, status, request_id, seconds = answer
        address = "%s:%d" % client if client else ""  # noqa: UP031 (uvicorn's get_client_addr)
        target = hide_secrets(path_with_query(path, query))
        if self._json:
            return json_line(
                created,
                "INFO",
                ACCESS_LOGGER,
                _MESSAGE % (address, method, target, version, status),
                request_id,
                method=method,
                path=target,
                status=status,
                duration_ms=round(seconds * 1000, 2),
                client=address,
            )
        if self._formatter.use_colors:
            record = logging.LogRecord(
                ACCESS_LOGGER,
                logging.INFO,
                __file__,
                0,
                _MESSAGE,
                (address, method, target, version, status),
                None,
            )
            return self._formatter.format(record)
        return plain_line(address, method, target, version, status)


# What `quote` leaves as it is (its safe "/" and the characters it never quotes): a path of
# these alone is shown as it came.
_UNQUOTED = re.compile(r"[A-Za-z0-9_.\-~/]*")


def path_with_query(path: str, query: bytes) -> str:
    """The request's target as uvicorn's access log shows it (its get_path_with_query_string)."""
    quoted = path if _UNQUOTED.fullmatch(path) else quote(path)
    return f"{quoted}?{query.decode('ascii')}" if query else quoted


_STATUS: dict[int, str] = {}


def plain_line(address: str, method: str, target: str, version: str, status: int) -> str:
    """uvicorn's access line without colours: `INFO:     <client> - "<request line>" <status>`."""
    shown = _STATUS.get(status)
    if shown is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        shown = _STATUS.setdefault(status, f"{status} {phrase}")
    return f'INFO:     {address} - "{method} {target} HTTP/{version}" {shown}'


def log_config(log_format: str = "text") -> dict[str, Any]:
    """uvicorn's logging configuration (for `uvicorn.run`, whose own access log is off: see the
    module). `json` (REGDESK_LOG_FORMAT): the service's own lines too are JSON objects with
    their request's id, formatted off the event loop."""
    config = copy.deepcopy(LOGGING_CONFIG)
    if log_format == "json":
        config["formatters"]["json"] = {"()": JsonLines}
        config["filters"] = {"request_stamped": {"()": RequestStamped}}
        config["handlers"]["default"] = {
            "()": LinesOffTheLoop,
            "formatter": "json",
            "filters": ["request_stamped"],
            "stream": "ext://sys.stderr",
        }
        # The service's own loggers (regdesk.*) reach the root: the same handler, same level
        # as without a configuration (warnings and errors).
        config["root"] = {"handlers": ["default"], "level": "WARNING"}
    return config
