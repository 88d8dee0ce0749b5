"""The webhooks' public keys (events.md, Delivery): what a receiver verifies signatures with.
No authentication: they are public."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from regdesk.db import utcnow
from regdesk.deps import SettingsDep, WriteSession
from regdesk.webhooks.signing import current_key, published_keys

router = APIRouter(prefix="/api/webhooks", tags=["Webhooks"])


@router.get(
    "/key",
    summary="The webhook signing key",
    response_class=Response,
    responses={200: {"content": {"application/x-pem-file": {}}}},
)
def webhook_key(session: WriteSession) -> Response:
    """The public key (PEM, SubjectPublicKeyInfo) webhooks are signed with now (RS256)."""
    return Response(current_key(session).pem(), media_type="application/x-pem-file")


@router.get("/keys", summary="The webhook signing keys (JWKS)")
def webhook_keys(session: WriteSession, settings: SettingsDep) -> JSONResponse:
    """A JWKS: the key in use, and every retired one still inside its overlap period
    (REGDESK_KEY_OVERLAP): a signature made just before a rotation still verifies."""
    current_key(session)  # made now when the instance has none yet
    keys = published_keys(session, settings.key_overlap, utcnow())
    return JSONResponse({"keys": [key.jwk() for key in keys]})
