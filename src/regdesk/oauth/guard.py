"""The bearer guard every API route uses (api.md 5; decisions.md, Errors).

A route states the scope it needs by the token it takes: `token: UserRead`. Every such
requirement is declared once, at the end of this module, and checked against the scope
registry when the module is imported: a misspelt scope stops the service from starting.
No live token: 401 with `Invalid token.` or `Token expired.` (the messages real clients look
for). A live token without the scope: 403 naming it. Cookies play no part (decisions.md).
Each request with a live token counts against its application's rate limit (ratelimit.py):
over it, 429, whatever the scope. A route about one user may also open to that user's own
token with a narrower scope (`OwnOr`: registrations.md, API, con:read).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.openapi.models import (
    OAuthFlowAuthorizationCode,
    OAuthFlowClientCredentials,
    OAuthFlows,
)
from fastapi.security import OAuth2, SecurityScopes
from starlette.requests import HTTPConnection

from regdesk import ratelimit
from regdesk.deps import Reads
from regdesk.errors import InsufficientScope, InvalidToken, RateLimited, TokenExpired
from regdesk.oauth.scopes import SCOPES, Holder
from regdesk.oauth.tokens import LiveToken, TokenRefused, find_live_token
from regdesk.schemas import record_id


class _Described(OAuth2):
    """The scheme as the OpenAPI document describes it. The header itself is read by `bearer`
    below, so asking it for the header again (as FastAPI calls every dependency, for each
    request) would only repeat that."""

    async def __call__(self, request: HTTPConnection) -> str | None:
        return None


oauth2_scheme = _Described(
    flows=OAuthFlows(
        clientCredentials=OAuthFlowClientCredentials(
            tokenUrl="/api/oauth/token",
            scopes={s.name: s.description for s in SCOPES.values() if s.holder & Holder.SERVICE},
        ),
        authorizationCode=OAuthFlowAuthorizationCode(
            authorizationUrl="/oauth/authorize",
            tokenUrl="/api/oauth/token",
            scopes={s.name: s.description for s in SCOPES.values() if s.holder & Holder.OBO},
        ),
    ),
    scheme_name="regdesk",
    auto_error=False,
)


def bearer_credential(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    header = request.headers.get("authorization", "")
    scheme, _, credential = header.partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential or len(credential) > 512:
        return None
    return credential


async def live_token(request: Request, reads: Reads) -> LiveToken:
    """The live token of the request, counted against its application's rate limit: 401 when
    there is none, 429 over the limit. Scopes are the caller's to check."""
    return await live_token_of(request, reads, bearer_credential(request))


# Where a request keeps the token its guard found, and its rate-limit verdict: a route asked
# twice in one request (quick_reads.py: the direct call, then FastAPI's own after a refusal)
# reads and counts its token once. A key of the request's scope: the first look finds nothing,
# which `request.state` tells by raising and catching an AttributeError (the current user
# answered 3 % more requests a second without it).
_GUARDED = "regdesk.guarded"


async def live_token_of(request: Request, reads: Reads, credential: str | None) -> LiveToken:
    """`live_token`, for a credential the caller read."""
    if credential is None:
        raise InvalidToken()
    token: LiveToken
    limited: ratelimit.Verdict | None
    guarded = request.scope.get(_GUARDED)
    if guarded is not None and guarded[0] == credential:
        _, token, limited = guarded
    else:
        try:
            token = await find_live_token(reads, credential)
        except TokenRefused as refused:
            raise TokenExpired() if refused.expired else InvalidToken() from None
        limited = ratelimit.count(request, "api", str(token.application_id))
        request.scope[_GUARDED] = (credential, token, limited)
    if limited is not None and not limited.allowed:
        raise RateLimited(limited.retry_after)
    return token


async def bearer(
    security_scopes: SecurityScopes,
    request: Request,
    reads: Reads,
    _: Annotated[str | None, Depends(oauth2_scheme)],  # declares the scheme in OpenAPI
) -> LiveToken:
    token = await live_token(request, reads)
    missing = [scope for scope in security_scopes.scopes if scope not in token.scopes]
    if missing:
        raise InsufficientScope(missing)
    return token


async def bearer_or_form(
    security_scopes: SecurityScopes,
    request: Request,
    reads: Reads,
    _: Annotated[str | None, Depends(oauth2_scheme)],
) -> LiveToken:
    """`bearer`, but a form-encoded POST may carry the token as its `access_token` field
    instead (RFC 6750 2.2; one way only): how certified OpenID relying parties (pyoidc) call
    userinfo by default (OpenID Connect Core 5.3.1)."""
    credential = bearer_credential(request)
    content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if request.method == "POST" and content_type == "application/x-www-form-urlencoded":
        in_body = (await request.form()).getlist("access_token")
        if in_body:
            if credential is not None or len(in_body) > 1 or not isinstance(in_body[0], str):
                raise InvalidToken()
            credential = in_body[0] if len(in_body[0]) <= 512 else None
            if credential is None:
                raise InvalidToken()
    token = await live_token_of(request, reads, credential)
    missing = [scope for scope in security_scopes.scopes if scope not in token.scopes]
    if missing:
        raise InsufficientScope(missing)
    return token


class OwnOr:
    """The guard of a route about one user, the path's `id`: a token with the route's scopes
    may ask about any user; a user's token with `own` only about its own user. Anyone else
    gets the 403 naming the scope that would do: `own` for a user's token asking about its
    own user, the route's scopes otherwise."""

    def __init__(self, own: str, path_parameter: str = "id") -> None:
        self.own = registered(own)
        self.path_parameter = path_parameter

    async def __call__(
        self,
        security_scopes: SecurityScopes,
        request: Request,
        reads: Reads,
        _: Annotated[str | None, Depends(oauth2_scheme)],
    ) -> LiveToken:
        token = await live_token(request, reads)
        if all(scope in token.scopes for scope in security_scopes.scopes):
            return token
        asked = record_id(str(request.path_params.get(self.path_parameter, "")))
        if token.user_id is not None and asked == token.user_id:
            if self.own in token.scopes:
                return token
            raise InsufficientScope([self.own])
        raise InsufficientScope(security_scopes.scopes)

    def openapi_extra(self) -> dict[str, Any]:
        """The route's `openapi_extra`: `own` as a second security requirement (either one
        does), after the one FastAPI writes for the route's scopes."""
        return {"security": [{oauth2_scheme.scheme_name: [self.own]}]}


# --- what routes need ------------------------------------------------------------------------


def registered(scope: str) -> str:
    """`scope`, when the registry knows it (oauth/scopes.py); else the import fails."""
    if scope not in SCOPES:
        raise LookupError(f"{scope!r} is not a scope of the registry")
    return scope


UserRead = Annotated[LiveToken, Security(bearer, scopes=[registered("user:read")])]
UserRolesUpdate = Annotated[LiveToken, Security(bearer, scopes=[registered("user:roles:update")])]
VolunteerRead = Annotated[LiveToken, Security(bearer, scopes=[registered("volunteer:read")])]
RegistrationRead = Annotated[LiveToken, Security(bearer, scopes=[registered("registration:read")])]
# registrations.md, API: a user's con:read token reads that user's own registration.
own_registration = OwnOr("con:read")
RegistrationReadOrOwn = Annotated[
    LiveToken, Security(own_registration, scopes=[registered("registration:read")])
]
OwnRegistration = Annotated[LiveToken, Security(bearer, scopes=[registered("con:read")])]
OwnOrders = Annotated[LiveToken, Security(bearer, scopes=[registered("pii:finance:read")])]
BasicProfile = Annotated[LiveToken, Security(bearer, scopes=[registered("pii:basic")])]
# registrations.md, Pages: a scanning app, on behalf of desk staff.
TicketRead = Annotated[LiveToken, Security(bearer, scopes=[registered("admin:ticket:read")])]
TicketScan = Annotated[LiveToken, Security(bearer, scopes=[registered("admin:ticket:scan")])]
# oidc.md: userinfo, with any token holding openid (the claims follow its other scopes).
OpenIdUser = Annotated[LiveToken, Security(bearer_or_form, scopes=[registered("openid")])]
