"""The access log of `regdesk serve` (uvicorn's own), without the secret some addresses carry:
the token of a mailed link (/password/reset/<token>, accounts/password_pages.py) is written as
`...`, so that a copy of the log opens no one's account."""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

from uvicorn.config import LOGGING_CONFIG

_LINK_TOKEN = re.compile(r"(/password/reset/)[^/?#&\s]+")


def hide_link_tokens(path: str) -> str:
    return _LINK_TOKEN.sub(r"\1...", path)


class LinkTokensHidden(logging.Filter):
    """On uvicorn's access logger, whose records carry (client, method, path, HTTP version,
    status) as their arguments: the path is rewritten before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) == 5:
            client, method, path, version, status = record.args
            record.args = (client, method, hide_link_tokens(str(path)), version, status)
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration, its access log filtered (for `uvicorn.run`)."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"link_tokens_hidden": {"()": LinkTokensHidden}}
    config["loggers"]["uvicorn.access"]["filters"] = ["link_tokens_hidden"]
    return config
