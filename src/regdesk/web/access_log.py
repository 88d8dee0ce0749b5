"""The access log of `regdesk serve` (uvicorn's own), without the secret some addresses carry:
the token of a mailed link (/password/reset/<token>, accounts/password_pages.py), and the value
of a query parameter that holds a token or a secret (`?id_token_hint=`, a careless client's
`?access_token=`), are written as `...`, so that a copy of the log opens no one's account.
REGDESK_LOG_FORMAT=json writes the same lines as JSON objects (observability/logs.py).

The log is on by default, so it must be cheap: the event loop only hands each request's record
to a queue; a thread of its own, waking at most every GATHER_SECONDS, formats the lines and
writes whatever has gathered in one write (`LinesOffTheLoop`). Lines still queued are written
when the server stops; a killed process loses the few it had not written yet.
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
from typing import Any, TextIO

from uvicorn.config import LOGGING_CONFIG

from regdesk.observability.logs import JsonLines, RequestStamped

_LINK_TOKEN = re.compile(r"(/password/reset/)[^/?#&\s]+")


# Query parameters whose value is a credential, here or in the OAuth and OpenID specifications.
_SECRET_QUERY = re.compile(
    r"([?&](?:access_token|refresh_token|id_token|id_token_hint|token|code|client_secret"
    r"|password|secret)=)[^&#\s]*",
    re.IGNORECASE,
)


def hide_link_tokens(path: str) -> str:
    return _LINK_TOKEN.sub(r"\1...", path)


def hide_secrets(path: str) -> str:
    """A request's path and query as the log may keep them: link tokens and secret values out."""
    return _SECRET_QUERY.sub(r"\1...", hide_link_tokens(path))


class LinkTokensHidden(logging.Filter):
    """On uvicorn's access logger, whose records carry (client, method, path, HTTP version,
    status) as their arguments: the path is rewritten before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) == 5:
            client, method, path, version, status = record.args
            record.args = (client, method, hide_secrets(str(path)), version, status)
        return True


BATCH = 1024  # lines at most in one write
# How long the writer lets lines gather after the first one. Waking it for every line (a
# thread switch and a write per request) cost the event loop a fifth of its time under load;
# a line now reaches the output at most this late.
GATHER_SECONDS = 0.05


class LinesOffTheLoop(logging.Handler):
    """A handler whose `emit` only queues the record; its thread formats and writes the lines
    in batches, to the standard output as it is when the line is written."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self._stream = stream
        self._records: queue.SimpleQueue[logging.LogRecord | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="access-log", daemon=True)
        self._writer.start()
        atexit.register(self.close)  # uvicorn's workers end without logging.shutdown

    def emit(self, record: logging.LogRecord) -> None:
        self._records.put(record)

    def _write(self) -> None:
        while True:
            batch: list[logging.LogRecord | None] = [self._records.get()]
            if batch[0] is not None:
                time.sleep(GATHER_SECONDS)
            while len(batch) < BATCH and not self._records.empty():
                batch.append(self._records.get())
            lines = [self._line(record) for record in batch if record is not None]
            if lines:
                try:
                    stream = self._stream or sys.stdout
                    stream.write("".join(lines))
                    stream.flush()
                except (OSError, ValueError):  # the output went away: the lines with it
                    pass
            if None in batch:
                return

    def _line(self, record: logging.LogRecord) -> str:
        try:
            return self.format(record) + "\n"
        except Exception:  # a bad record costs its line, never the log
            return ""

    def close(self) -> None:
        """Every queued line written, then the thread ended (once; again is harmless)."""
        if self._writer.is_alive():
            self._records.put(None)
            self._writer.join(timeout=5)
        super().close()


def log_config(log_format: str = "text") -> dict[str, Any]:
    """uvicorn's logging configuration, its access log filtered and written off the event loop
    (for `uvicorn.run`). `json` (REGDESK_LOG_FORMAT): every line, the service's own included,
    a JSON object with its request's id, formatted off the event loop as well."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"link_tokens_hidden": {"()": LinkTokensHidden}}
    config["loggers"]["uvicorn.access"]["filters"] = ["link_tokens_hidden"]
    config["handlers"]["access"] = {"()": LinesOffTheLoop, "formatter": "access"}
    if log_format == "json":
        stamped = ["request_stamped"]
        config["formatters"]["json"] = {"()": JsonLines}
        config["filters"]["request_stamped"] = {"()": RequestStamped}
        config["handlers"]["access"] = {
            "()": LinesOffTheLoop,
            "formatter": "json",
            "filters": stamped,
        }
        config["handlers"]["default"] = {
            "()": LinesOffTheLoop,
            "formatter": "json",
            "filters": stamped,
            "stream": "ext://sys.stderr",
        }
        # The service's own loggers (regdesk.*) reach the root: the same handler, same level
        # as without a configuration (warnings and errors).
        config["root"] = {"handlers": ["default"], "level": "WARNING"}
    return config
