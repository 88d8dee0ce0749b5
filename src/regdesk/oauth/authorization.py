"""The authorization request (api.md 4.1, 5.1): checked, then approved or denied by the user.

Order matters (RFC 6749 4.1.2.1): an unknown client or a redirect URI that is not registered is
shown to the user as an error page and never redirected to; every later problem is sent back
to the application's redirect URI with `error`, `state` and `iss`.

Written on our own primitives rather than Authlib's grant: our rules need the page-or-redirect
split above, an "Invalid request" page that depends on the signed-in user's permissions, and
`iss` (RFC 9207) on every response, which Authlib's authorization flow does not model.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sqlalchemy import insert
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow
from regdesk.oauth.clients import load_client
from regdesk.oauth.models import AuthorizationCode
from regdesk.oauth.permissions import ADMIN, is_staff_permission, permissions_of
from regdesk.oauth.scopes import SCOPES, Holder, ScopeError, check_scopes, parse_scopes
from regdesk.security import new_secret, token_hash

CODE_TTL = dt.timedelta(minutes=10)  # decisions.md, Tokens
MAX_STATE = 4096  # decisions.md: at least 1024 characters come back byte for byte
PKCE_CHALLENGE = re.compile(r"^[A-Za-z0-9._~-]{43,128}$")  # RFC 7636 4.2, S256 output


@dataclass(frozen=True)
class AuthorizationRequest:
    """A checked request, ready for the consent screen."""

    application_id: int
    application_name: str
    application_description: str
    redirect_uri: str
    scopes: tuple[str, ...]
    state: str | None
    code_challenge: str | None
    code_challenge_method: str | None

    @property
    def sensitive_scopes(self) -> list[str]:
        return [s for s in self.scopes if SCOPES[s].sensitive]


class AuthorizationPageError(Exception):
    """Shown to the user as a page (400); never a redirect."""


class AuthorizationRedirectError(Exception):
    """Sent back to the application: `location` carries the error, state and iss."""

    def __init__(self, location: str, error: str) -> None:
        super().__init__(error)
        self.location = location
        self.error = error


def with_params(uri: str, params: Sequence[tuple[str, str]]) -> str:
    """`uri` with `params` added to its query, keeping what it already has."""
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True) + list(params)
    return urlunsplit(parts._replace(query=urlencode(query)))


def check_authorization_request(
    session: Session, params: Sequence[tuple[str, str]], issuer: str
) -> AuthorizationRequest:
    """The request's parameters checked against the client and the scope registry."""
    values: defaultdict[str, list[str]] = defaultdict(list)
    for key, value in params:
        values[key].append(value)

    def single(name: str) -> str | None:
        found = values.get(name, [])
        return found[0] if len(found) == 1 else None

    client = load_client(session, single("client_id"))
    if client is None:
        raise AuthorizationPageError("The application is unknown or suspended.")
    redirect_uri = single("redirect_uri")
    if redirect_uri is None or not client.check_redirect_uri(redirect_uri):
        raise AuthorizationPageError(
            "The redirect address is not one registered for this application."
        )
    application = client.application
    state = single("state")

    def refuse(error: str, description: str) -> AuthorizationRedirectError:
        reply = [("error", error), ("error_description", description)]
        if state is not None:
            reply.append(("state", state))
        reply.append(("iss", issuer))
        return AuthorizationRedirectError(with_params(redirect_uri, reply), error)

    repeated = [name for name, found in values.items() if len(found) > 1]
    if repeated:  # RFC 6749 3.1
        raise refuse("invalid_request", f"The parameter {repeated[0]!r} was sent more than once.")
    if state is not None and len(state) > MAX_STATE:
        raise refuse("invalid_request", f"The state is longer than {MAX_STATE} characters.")
    if single("response_type") != "code":
        raise refuse("unsupported_response_type", "Only response_type=code is supported.")
    scopes = parse_scopes(single("scope"))
    if not scopes:
        raise refuse("invalid_scope", "The scope parameter is required.")
    try:
        check_scopes(scopes, Holder.OBO)
    except ScopeError as exc:
        raise refuse("invalid_scope", f"{str(exc).capitalize()}.") from None
    allowed = set(parse_scopes(application.obo_scopes))
    beyond = [s for s in scopes if s not in allowed]
    if beyond:
        raise refuse("invalid_scope", f"The application may not ask for {beyond[0]!r}.")
    challenge, method = single("code_challenge"), single("code_challenge_method")
    if challenge is None and method is not None:
        raise refuse("invalid_request", "code_challenge_method needs a code_challenge.")
    if challenge is not None:
        if method != "S256":  # RFC 9700 2.1.1: plain is not accepted
            raise refuse("invalid_request", "Only code_challenge_method=S256 is supported.")
        if not PKCE_CHALLENGE.match(challenge):
            raise refuse("invalid_request", "The code_challenge is malformed.")
    return AuthorizationRequest(
        application_id=application.id,
        application_name=application.name,
        application_description=application.description,
        redirect_uri=redirect_uri,
        scopes=tuple(scopes),
        state=state,
        code_challenge=challenge,
        code_challenge_method=method,
    )


def scopes_user_lacks(session: Session, user_id: int, scopes: Sequence[str]) -> list[str]:
    """The sensitive scopes this user may not grant (api.md 5.1.3; decisions.md, Scopes)."""
    sensitive = [s for s in scopes if SCOPES[s].sensitive]
    if not sensitive:
        return []
    held = set(permissions_of(session, user_id))
    if ADMIN in held:
        return []
    return [s for s in sensitive if s not in held]


def holds_sensitive_permission(session: Session, user_id: int) -> bool:
    """Whether the user holds `admin`, a permission that lets them grant a sensitive scope, or
    one that opens staff pages (the desk): staff, whom REGDESK_STAFF_2FA=required asks for a
    second factor (accounts.md)."""
    return any(is_staff_permission(name) for name in permissions_of(session, user_id))


def approve(
    session: Session, actor: Actor, request: AuthorizationRequest, user_id: int, issuer: str
) -> str:
    """The user granted everything asked: a code for the application. Returns the redirect."""
    code = new_secret(32)
    now = utcnow()
    session.execute(
        insert(AuthorizationCode).values(
            code_hash=token_hash(code),
            application_id=request.application_id,
            user_id=user_id,
            redirect_uri=request.redirect_uri,
            scope=" ".join(request.scopes),
            code_challenge=request.code_challenge,
            code_challenge_method=request.code_challenge_method,
            created_at=now,
            expires_at=now + CODE_TTL,
        )
    )
    record_event(
        session,
        actor,
        "oauth.consent_granted",
        target_type="application",
        target_id=request.application_id,
        details={"scopes": list(request.scopes)},
    )
    reply = [("code", code)]
    if request.state is not None:
        reply.append(("state", request.state))
    reply.append(("iss", issuer))
    return with_params(request.redirect_uri, reply)


def deny(session: Session, actor: Actor, request: AuthorizationRequest, issuer: str) -> str:
    """The user said no: `error=access_denied` back to the application."""
    record_event(
        session,
        actor,
        "oauth.consent_denied",
        target_type="application",
        target_id=request.application_id,
    )
    reply = [("error", "access_denied"), ("error_description", "The user denied the request.")]
    if request.state is not None:
        reply.append(("state", request.state))
    reply.append(("iss", issuer))
    return with_params(request.redirect_uri, reply)
