"""The access log (web/access_log.py): the event loop only notes each answer; a thread of its
own makes the lines, uvicorn's own lines, and writes them in order, none lost when the server
stops."""

from __future__ import annotations

import io
import json
import logging
import threading
from typing import Any

import pytest
from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from regdesk.observability.request_ids import RequestContext
from regdesk.web.access_log import AccessLines, OffTheLoop, plain_line


class Recorded(io.StringIO):
    """A stream that notes which thread wrote to it, and how many times."""

    def __init__(self) -> None:
        super().__init__()
        self.writers: set[str] = set()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writers.add(threading.current_thread().name)
        self.writes += 1
        return super().write(text)


def test_every_line_is_written_in_order_by_the_writers_own_thread() -> None:
    stream = Recorded()
    lines: OffTheLoop[int] = OffTheLoop(lambda n: f"GET /r/{n}", stream)
    for n in range(5000):
        lines.put(n)
    lines.close()
    assert stream.getvalue().splitlines() == [f"GET /r/{n}" for n in range(5000)]
    assert stream.writers == {"access-log"}  # never the thread that answered the request


def test_an_item_that_cannot_be_made_into_a_line_costs_its_line_only() -> None:
    stream = Recorded()
    lines: OffTheLoop[int] = OffTheLoop(lambda n: f"GET /r/{10 // n}", stream)
    for n in (1, 0, 2):
        lines.put(n)
    lines.close()
    assert stream.getvalue().splitlines() == ["GET /r/10", "GET /r/5"]


def test_lines_noted_one_by_one_are_written_together() -> None:
    """A line a millisecond, as under load: the thread lets them gather before it writes, not
    woken (a thread switch and a write) for each request."""
    stream = Recorded()
    lines: OffTheLoop[int] = OffTheLoop(str, stream)
    for n in range(200):
        lines.put(n)
        threading.Event().wait(0.001)
    lines.close()
    assert len(stream.getvalue().splitlines()) == 200
    assert stream.writes <= 20


def scope(path: str, query: bytes = b"", client: Any = ("203.0.113.9", 50522)) -> dict[str, Any]:
    return {
        "type": "http",
        "client": client,
        "method": "GET",
        "path": path,
        "query_string": query,
        "http_version": "1.1",
    }


REQUESTS = [
    (scope("/api/v0/users/4"), 200),
    (scope("/api/v0/users/search"), 404),
    (scope("/caf\u00e9 bar/\u2603", b"x=1&y=%20"), 301),
    (scope("/static/app-1.2_x~y.css"), 200),  # only what quoting leaves as it is
    (scope("/a+b%20c:d@e"), 404),  # with characters quoting changes
    (scope("/login", b"next=/account"), 303),
    (scope("/weird"), 599),  # no phrase
    (scope("/", client=None), 500),
]


@pytest.mark.parametrize(("request_scope", "status"), REQUESTS)
def test_a_plain_line_is_uvicorns_own(request_scope: dict[str, Any], status: int) -> None:
    """What uvicorn's access log wrote for the same answer, to a file or a pipe (no colours)."""
    args = (
        get_client_addr(request_scope),  # type: ignore[arg-type]
        request_scope["method"],
        get_path_with_query_string(request_scope),  # type: ignore[arg-type]
        request_scope["http_version"],
        status,
    )
    fmt = LOGGING_CONFIG["formatters"]["access"]["fmt"]
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', args, None
    )
    expected = AccessFormatter(fmt, use_colors=False).format(record)
    assert plain_line(*args) == expected

    stream = Recorded()
    lines = AccessLines("text", stream)
    lines.note(request_scope, status, RequestContext("abc", 0.0))
    lines.close()
    assert stream.getvalue() == expected + "\n"


def test_a_json_line_has_the_answer_and_the_request_id() -> None:
    stream = Recorded()
    lines = AccessLines("json", stream)
    lines.note(scope("/api/v0/users", b"access_token=s3cret&x=1"), 200, RequestContext("r.1", 0.0))
    lines.close()
    line = json.loads(stream.getvalue())
    assert line.pop("time").endswith("+00:00")
    assert line.pop("duration_ms") > 0
    assert line == {
        "level": "INFO",
        "logger": "uvicorn.access",
        "message": '203.0.113.9:50522 - "GET /api/v0/users?access_token=...&x=1 HTTP/1.1" 200',
        "request_id": "r.1",
        "method": "GET",
        "path": "/api/v0/users?access_token=...&x=1",
        "status": 200,
        "client": "203.0.113.9:50522",
    }


def test_the_loop_makes_no_log_record_for_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Noting an answer is a tuple queued: a log record (its caller looked up, its fields
    copied) is what made the access log a fifth of a request's time."""
    made: list[str] = []
    record_init = logging.LogRecord.__init__

    def counting(self: logging.LogRecord, *args: Any, **kwargs: Any) -> None:
        made.append(threading.current_thread().name)
        record_init(self, *args, **kwargs)

    monkeypatch.setattr(logging.LogRecord, "__init__", counting)
    stream = Recorded()
    lines = AccessLines("text", stream)
    for request_scope, status in REQUESTS:
        lines.note(request_scope, status, RequestContext("abc", 0.0))
    lines.close()
    assert len(stream.getvalue().splitlines()) == len(REQUESTS)
    assert threading.current_thread().name not in made
