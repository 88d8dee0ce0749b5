"""What every resource's request and response shapes share."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from regdesk.db import ID_MAX
from regdesk.errors import ValidationFailed, field_errors
from regdesk.pagination import DEFAULT_LIMIT, MAX_LIMIT

MAX_JSON_BODY = 64 * 1024


class Record(BaseModel):
    """A request or response shape: unknown members are an error, never ignored."""

    model_config = ConfigDict(extra="forbid")


class PageRequest(Record):
    """The body of a search (api.md 4.3, 4.7). `{}`, or no body, is the first page of 100."""

    nextPage: StrictStr | None = Field(
        default=None,
        description="Omitted (or null, or empty) on the first call; then the previous `nextPage`.",
    )
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT


def record_id(value: str) -> int | None:
    """A path id: a decimal integer a record can have, else None (decisions.md: then a 404)."""
    if not value.isascii() or not value.isdigit() or len(value) > len(str(ID_MAX)):
        return None
    number = int(value)
    return number if number <= ID_MAX else None


# --- JSON request bodies -------------------------------------------------------------------

M = TypeVar("M", bound=BaseModel)

# Every model read by `json_body`, for the OpenAPI document's components.
REQUEST_MODELS: dict[str, type[BaseModel]] = {}


def json_body(model: type[M]) -> Any:
    """A dependency reading the body as JSON whatever its Content-Type, as `model`.

    Real clients omit the Content-Type or send a form type with a JSON body; an empty body is
    `{}` (decisions.md: "Body `{}`, or no body, means the first page"). Every problem is a 400
    in the envelope, naming the field.
    """
    REQUEST_MODELS[model.__name__] = model

    async def read(request: Request) -> M:
        raw = await request.body()
        if len(raw) > MAX_JSON_BODY:
            raise ValidationFailed("The body is too large.", {"body": "At most 64 KiB."})
        try:
            document = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError):  # also: not UTF-8, 4300+ digits, nested too deep
            raise ValidationFailed("The body is not valid JSON.", {"body": "Not JSON."}) from None
        if not isinstance(document, dict):
            raise ValidationFailed("The body must be a JSON object.", {"body": "Not an object."})
        unstorable = _unstorable_text(document)
        if unstorable is not None:
            raise ValidationFailed(
                "The request is not valid.", {unstorable: "Text with a NUL or a lone surrogate."}
            )
        try:
            return model.model_validate(document)
        except ValidationError as exc:
            raise ValidationFailed(
                "The request is not valid.", field_errors(exc.errors())
            ) from None

    return Depends(read)


# NUL, which PostgreSQL refuses in text, and lone surrogates (`\ud800`), which are no UTF-8:
# valid JSON escapes that no database stores, compares or echoes.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _unstorable_text(document: dict[str, Any]) -> str | None:
    """The field (dotted, as `field_errors` names them) of the first member name or string
    holding unstorable text; None when there is none. Walked without recursion: a document as
    deep as `json.loads` allows must not exhaust the stack here."""
    pending: list[tuple[str, Any]] = [("", document)]
    while pending:
        name, value = pending.pop()
        if isinstance(value, str):
            if _UNSTORABLE.search(value):
                return name or "body"
        elif isinstance(value, dict):
            for key, member in value.items():
                if _UNSTORABLE.search(key):
                    return name or "body"
                pending.append((f"{name}.{key}" if name else key, member))
        elif isinstance(value, list):
            pending += [(f"{name}.{i}" if name else str(i), m) for i, m in enumerate(value)]
    return None


def request_body_openapi(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` describing a `json_body(model)` request body."""
    return {
        "requestBody": {
            "required": False,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
            },
        }
    }


def add_request_models(document: dict[str, Any]) -> None:
    """Put the `json_body` models (and the models they use) in the document's components."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name, model in REQUEST_MODELS.items():
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema


class JSONText(Response):
    """A response whose body is JSON text already (documents/models.py)."""

    media_type = "application/json"
