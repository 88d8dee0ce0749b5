"""The access log's handler (web/access_log.py): the event loop only queues a record; a thread
of its own formats and writes the lines, in order, and none is lost when the server stops."""

from __future__ import annotations

import io
import logging
import threading

from regdesk.web.access_log import LinesOffTheLoop, LinkTokensHidden, log_config


class Recorded(io.StringIO):
    """A stream that notes which thread wrote to it."""

    def __init__(self) -> None:
        super().__init__()
        self.writers: set[str] = set()

    def write(self, text: str) -> int:
        self.writers.add(threading.current_thread().name)
        return super().write(text)


def _record(n: int) -> logging.LogRecord:
    return logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, "%s %s", ("GET", f"/r/{n}"), None
    )


def test_every_line_is_written_in_order_by_the_handlers_own_thread() -> None:
    stream = Recorded()
    handler = LinesOffTheLoop(stream)
    for n in range(5000):
        handler.handle(_record(n))
    handler.close()
    assert stream.getvalue().splitlines() == [f"GET /r/{n}" for n in range(5000)]
    assert stream.writers == {"access-log"}  # never the thread that logged the request


def test_a_record_that_cannot_be_formatted_costs_its_line_only() -> None:
    stream = Recorded()
    handler = LinesOffTheLoop(stream)
    handler.handle(_record(1))
    handler.handle(
        logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, "%s %s %s", ("x",), None)
    )
    handler.handle(_record(2))
    handler.close()
    assert stream.getvalue().splitlines() == ["GET /r/1", "GET /r/2"]


def test_serve_logs_access_through_it_with_link_tokens_hidden() -> None:
    config = log_config()
    assert config["handlers"]["access"]["()"] is LinesOffTheLoop
    assert config["loggers"]["uvicorn.access"]["handlers"] == ["access"]
    assert config["filters"]["link_tokens_hidden"]["()"] is LinkTokensHidden


class Writes(io.StringIO):
    """A stream that counts its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_lines_logged_one_by_one_are_written_together() -> None:
    """A line a millisecond, as under load: the thread lets them gather before it writes, not
    woken (a thread switch and a write) for each request."""
    stream = Writes()
    handler = LinesOffTheLoop(stream)
    for n in range(200):
        handler.handle(_record(n))
        threading.Event().wait(0.001)
    handler.close()
    assert len(stream.getvalue().splitlines()) == 200
    assert stream.writes <= 20
