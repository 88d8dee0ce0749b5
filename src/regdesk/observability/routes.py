"""/metrics on the main port: only for a bearer token equal to REGDESK_METRICS_TOKEN (compared
in constant time); without one configured it is not there (404, as any unknown path)."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response

from regdesk.errors import InvalidToken, NotFound
from regdesk.observability.exposition import CONTENT_TYPE, scrape

router = APIRouter(include_in_schema=False)


@router.get("/metrics")
def metrics_text(request: Request) -> Response:
    token: str | None = request.app.state.settings.metrics_token
    if token is None:
        raise NotFound("Not found.")
    if not bearer_is(request.headers.get("authorization", ""), token):
        raise InvalidToken()
    return Response(
        scrape(request.app.state.outbox_backlog),
        media_type=CONTENT_TYPE,
        headers={"Cache-Control": "no-store"},
    )


def bearer_is(authorization: str, token: str) -> bool:
    """Whether an Authorization header is `Bearer <token>`, in time independent of where a
    wrong token first differs."""
    scheme, _, given = authorization.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )
