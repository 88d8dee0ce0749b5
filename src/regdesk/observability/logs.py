"""REGDESK_LOG_FORMAT=json: each log line one JSON object, the access log's and the service's
own alike, carrying the id of the request it was written for (request_ids.py).

    {"time": "2026-12-01T09:00:00.123+00:00", "level": "INFO", "logger": "uvicorn.access",
     "message": "...", "request_id": "3f2c...", "method": "GET", "path": "/api/v0/users/4",
     "status": 200, "duration_ms": 1.87, "client": "127.0.0.1:50522"}

The request's id is read by `RequestStamped` on the thread that logs, while the request's
context is at hand; `JsonLines` formats later, on the handler's own thread (web/access_log.py
LinesOffTheLoop), off the event loop. An access line is made by `json_line` from what the
outermost layer noted of the answer (web/access_log.py AccessLines), its path with link tokens
and secret query values hidden: nothing here adds a header, a body or a query value to a line.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

from regdesk.observability.request_ids import current

ACCESS_LOGGER = "uvicorn.access"


class RequestStamped(logging.Filter):
    """On a handler: notes the id of the request being answered on each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = current.get()
        record.request_id = None if context is None else context.id
        return True


def json_line(
    created: float,
    level: str,
    logger: str,
    message: str,
    request_id: str | None,
    **fields: object,
) -> str:
    """One line of the JSON log: `created` in seconds since the epoch, then the fields."""
    line = {
        "time": dt.datetime.fromtimestamp(created, dt.UTC).isoformat(timespec="milliseconds"),
        "level": level,
        "logger": logger,
        "message": message,
        "request_id": request_id,
        **fields,
    }
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str)


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = {"exception": self.formatException(record.exc_info)} if record.exc_info else {}
        return json_line(
            record.created,
            record.levelname,
            record.name,
            record.getMessage(),
            getattr(record, "request_id", None),
            **extra,
        )
