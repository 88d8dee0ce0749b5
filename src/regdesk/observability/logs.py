"""REGDESK_LOG_FORMAT=json: each log line one JSON object, the access log's and the service's
own alike, carrying the id of the request it was written for (request_ids.py).

    {"time": "2026-12-01T09:00:00.123+00:00", "level": "INFO", "logger": "uvicorn.access",
     "message": "...", "request_id": "3f2c...", "method": "GET", "path": "/api/v0/users/4",
     "status": 200, "duration_ms": 1.87, "client": "127.0.0.1:50522"}

The request's id and timing are read by `RequestStamped` on the thread that logs, while the
request's context is at hand; `JsonLines` formats later, on the handler's own thread
(web/access_log.py LinesOffTheLoop), off the event loop. The access line's path is the one the
access log's filter left (link tokens and secret query values hidden): nothing here adds a
header, a body or a query value to a line.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from time import perf_counter

from regdesk.observability.request_ids import current

ACCESS_LOGGER = "uvicorn.access"


class RequestStamped(logging.Filter):
    """On a handler: notes the request's id on each record and, on an access record (uvicorn's
    arguments: client, method, path, HTTP version, status), its fields and duration so far
    (uvicorn logs the access line as the answer starts)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = current.get()
        record.request_id = None if context is None else context.id
        if (
            record.name == ACCESS_LOGGER
            and isinstance(record.args, tuple)
            and len(record.args) == 5
        ):
            client, method, path, _version, status = record.args
            record.access = {
                "method": method,
                "path": path,
                "status": status,
                "duration_ms": (
                    None if context is None else round((perf_counter() - context.started) * 1000, 2)
                ),
                "client": client,
            }
        return True


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        line.update(getattr(record, "access", None) or {})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str)
