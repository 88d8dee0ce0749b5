"""The body of a token, revocation or introspection request: a form (RFC 6749 4), or a JSON
object as some clients send, read into each field with all its values."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any
from urllib.parse import parse_qsl

from regdesk.errors import OAuthError

MAX_TOKEN_BODY = 16 * 1024
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def token_fields(body: bytes, content_type: str) -> dict[str, list[str]]:
    """Each field of the request with all its values; OAuthError when it cannot be read."""
    if len(body) > MAX_TOKEN_BODY:
        raise OAuthError("invalid_request", "The request body is too large.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise OAuthError("invalid_request", "The request body is not UTF-8.") from None
    fields: dict[str, list[str]] = defaultdict(list)
    if content_type.split(";")[0].strip() == "application/json":
        for key, value in _json_fields(text).items():
            fields[key].extend(value if isinstance(value, list) else [value])
    else:
        for key, value in parse_qsl(text, keep_blank_values=True):
            fields[key].append(value)
    for key, values in fields.items():
        if key != "scope" and len(values) > 1:
            # RFC 6749 3.2: parameters MUST NOT be repeated (scope is our one exception).
            raise OAuthError("invalid_request", f"The parameter {key!r} was sent more than once.")
        if not all(isinstance(v, str) for v in values):
            raise OAuthError("invalid_request", f"The parameter {key!r} must be a string.")
        if any(_LONE_SURROGATE.search(v) for v in values):  # a JSON `\ud800`: no UTF-8 text
            raise OAuthError("invalid_request", f"The parameter {key!r} is not text.")
    return fields


def _json_fields(text: str) -> dict[str, Any]:
    try:
        document = json.loads(text or "{}")
    except (ValueError, RecursionError):  # also a number of 4300+ digits, or nested too deep
        raise OAuthError("invalid_request", "The request body is not valid JSON.") from None
    if not isinstance(document, dict):
        raise OAuthError("invalid_request", "The request body must be an object.")
    return document
