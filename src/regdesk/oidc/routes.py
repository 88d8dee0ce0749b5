"""OpenID Connect's endpoints (oidc.md): discovery (with RFC 8414's document, the same one),
the JWKS, userinfo, and RP-initiated logout (`/oauth/end-session`).

The ID token itself is issued by the token endpoint (oauth/routes.py), through the grant
extensions of oidc/id_tokens.py.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from regdesk.db import utcnow
from regdesk.deps import IssuerDep, ReadSession
from regdesk.errors import NO_STORE, api_responses
from regdesk.oauth.authorization import with_params
from regdesk.oauth.clients import load_client
from regdesk.oauth.guard import OpenIdUser
from regdesk.oidc.claims import user_claims
from regdesk.oidc.discovery import END_SESSION_PATH, JWKS_PATH, USERINFO_PATH, server_metadata
from regdesk.oidc.id_tokens import read_id_token_hint
from regdesk.oidc.keys import published_keys
from regdesk.web.pages import render
from regdesk.web.sessions import COOKIE_NAME
from regdesk.web.visitor import PageDb, Visitor, VisitorDep, clear_session_cookie, end_visit

router = APIRouter(tags=["OpenID Connect"])
pages = APIRouter(include_in_schema=False)

MAX_HINT = 8192  # an ID token with every claim is well under this


@router.get("/.well-known/openid-configuration", summary="OpenID Provider metadata (Discovery 1.0)")
def openid_configuration(issuer: IssuerDep) -> JSONResponse:
    return JSONResponse(server_metadata(issuer))


@router.get("/.well-known/oauth-authorization-server", summary="Server metadata (RFC 8414)")
def oauth_metadata(issuer: IssuerDep) -> JSONResponse:
    return JSONResponse(server_metadata(issuer))


@router.get(
    JWKS_PATH,
    summary="The keys ID tokens are signed with (JWKS)",
    description="Public keys only, each with its `kid`: those in use and those retired within "
    "REGDESK_KEY_OVERLAP, so that a token signed before a rotation still verifies.",
)
def jwks(request: Request, session: ReadSession) -> JSONResponse:
    overlap = request.app.state.settings.key_overlap
    keys = [key.jwk() for key in published_keys(session, overlap, utcnow())]
    return JSONResponse({"keys": keys}, headers={"Cache-Control": "public, max-age=300"})


def _userinfo(token: OpenIdUser, session: Session) -> JSONResponse:
    assert token.user_id is not None  # openid is held on behalf of a user only
    claims = user_claims(session, token.user_id, token.scopes)
    return JSONResponse(claims, headers=NO_STORE)


USERINFO: dict[str, Any] = {
    "summary": "The signed-in user's claims (OpenID Connect Core 5.3)",
    "description": "`sub`, and the claims of the token's scopes. A token without `openid`: "
    '403 with `WWW-Authenticate: Bearer error="insufficient_scope"` (RFC 6750).',
    "responses": api_responses(401, 403),
}


@router.get(USERINFO_PATH, **USERINFO)
def userinfo(token: OpenIdUser, session: ReadSession) -> JSONResponse:
    return _userinfo(token, session)


@router.post(USERINFO_PATH, **USERINFO)
def userinfo_post(token: OpenIdUser, session: ReadSession) -> JSONResponse:
    return _userinfo(token, session)


# --- RP-initiated logout ----------------------------------------------------------------------


@pages.get(END_SESSION_PATH)
def end_session(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    issuer: IssuerDep,
    id_token_hint: Annotated[str | None, Query()] = None,
    client_id: Annotated[str | None, Query()] = None,
    post_logout_redirect_uri: Annotated[str | None, Query()] = None,
    state: Annotated[str | None, Query()] = None,
) -> Response:
    """RP-Initiated Logout 1.0. Like /oauth/logout (web/consent.py), which it extends: a
    request that ends the session without a CSRF token (what it is for; logging out can sign
    no one in), and back to the application only at an address registered for that."""
    hint = (id_token_hint, client_id, post_logout_redirect_uri, state)
    return _end_session(request, db, visitor, issuer, *hint)


@pages.post(END_SESSION_PATH)
def end_session_form(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    issuer: IssuerDep,
    id_token_hint: Annotated[str | None, Form()] = None,
    client_id: Annotated[str | None, Form()] = None,
    post_logout_redirect_uri: Annotated[str | None, Form()] = None,
    state: Annotated[str | None, Form()] = None,
) -> Response:
    """The same, posted as a form (RP-Initiated Logout 1.0, 2: GET and POST)."""
    hint = (id_token_hint, client_id, post_logout_redirect_uri, state)
    return _end_session(request, db, visitor, issuer, *hint)


def _end_session(
    request: Request,
    db: Session,
    visitor: Visitor | None,
    issuer: str,
    id_token_hint: str | None,
    client_id: str | None,
    post_logout_redirect_uri: str | None,
    state: str | None,
) -> Response:
    if visitor is not None:
        end_visit(db, visitor)
    target = _back_to(request, db, issuer, id_token_hint, client_id, post_logout_redirect_uri)
    response: Response
    if target is not None:
        location = with_params(target, [("state", state)] if state is not None else [])
        response = RedirectResponse(location, status_code=303)
    else:
        response = render(request, "logout.html", {"visitor": None})
    if request.cookies.get(COOKIE_NAME):
        clear_session_cookie(response, request)
    return response


def _back_to(
    request: Request,
    db: Session,
    issuer: str,
    id_token_hint: str | None,
    client_id: str | None,
    uri: str | None,
) -> str | None:
    """`uri`, when it is registered, exactly, as a post-logout address of the application
    the request names (by `client_id`, or the `aud` of an ID token we signed: both must agree
    when both are sent). Else None: no redirect, a page."""
    if not uri:
        return None
    named: list[str] = [client_id] if client_id else []
    if id_token_hint:
        hint = None
        if len(id_token_hint) <= MAX_HINT:
            hint = read_id_token_hint(
                db,
                id_token_hint,
                issuer=issuer,
                overlap=request.app.state.settings.key_overlap,
                now=utcnow(),
            )
        if hint is None:
            return None
        named.append(hint.client_id)
    if not named or len(set(named)) != 1:
        return None
    client = load_client(db, named[0])
    if client is None or uri not in client.application.post_logout_redirect_uris:
        return None
    return uri
