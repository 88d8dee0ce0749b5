"""The authorization request (api.md 4.1, 5.1): checked, then approved or denied by the user.

Order matters (RFC 6749 4.1.2.1): an unknown client or a redirect URI that is not registered is
shown to the user as an error page and never redirected to; every later problem is sent back
to the application's redirect URI with `error`, `state` and `iss`.

Written on our own primitives rather than Authlib's grant: our rules need the page-or-redirect
split above, an "Invalid request" page that depends on the signed-in user's permissions, and
`iss` (RFC 9207) on every response, which Authlib's authorization flow does not model.

OpenID Connect's parameters (oidc.md) are read here too: `nonce` (kept with the code for the
ID token, refused while a live code of the application carries it), `prompt`, `max_age` and
`login_hint` (what the consent page does with them: web/consent.py); `ui_locales`, like any
other parameter we do not know, is ignored.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow
from regdesk.oauth.clients import load_client
from regdesk.oauth.models import Application, AuthorizationCode, Grant
from regdesk.oauth.permissions import ADMIN, is_staff_permission, permissions_of
from regdesk.oauth.scopes import SCOPES, Holder, ScopeError, check_scopes, parse_scopes
from regdesk.security import new_secret, token_hash

CODE_TTL = dt.timedelta(minutes=10)  # decisions.md, Tokens
MAX_STATE = 4096  # decisions.md: at least 1024 characters come back byte for byte
PKCE_CHALLENGE = re.compile(r"^[A-Za-z0-9._~-]{43,128}$")  # RFC 7636 4.2, S256 output
MAX_NONCE = 255
MAX_LOGIN_HINT = 320  # the login form's username field
# OpenID Connect Core 3.1.2.1; select_account asks nothing of us: one account per session.
PROMPTS = frozenset({"none", "login", "consent", "select_account"})


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
    # OpenID Connect (oidc.md): the nonce of an `openid` request; prompt, max_age, login_hint.
    nonce: str | None = None
    prompt: frozenset[str] = frozenset()
    max_age: int | None = None
    login_hint: str | None = None

    @property
    def sensitive_scopes(self) -> list[str]:
        return [s for s in self.scopes if SCOPES[s].sensitive]

    @property
    def is_openid(self) -> bool:
        return "openid" in self.scopes


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
    prompt = frozenset((single("prompt") or "").split())
    if prompt - PROMPTS:
        raise refuse("invalid_request", f"Unknown prompt value {sorted(prompt - PROMPTS)[0]!r}.")
    if "none" in prompt and len(prompt) > 1:  # OpenID Connect Core 3.1.2.1
        raise refuse("invalid_request", "prompt=none cannot be combined with another value.")
    max_age = single("max_age")
    if max_age is not None and not (max_age.isascii() and max_age.isdigit() and len(max_age) < 10):
        raise refuse("invalid_request", "max_age must be a number of seconds.")
    nonce = single("nonce") if "openid" in scopes else None
    if nonce is not None:
        if len(nonce) > MAX_NONCE:
            raise refuse("invalid_request", f"The nonce is longer than {MAX_NONCE} characters.")
        if nonce_in_use(session, application.id, nonce):
            raise refuse("invalid_request", "This nonce was already used.")
    return AuthorizationRequest(
        application_id=application.id,
        application_name=application.name,
        application_description=application.description,
        redirect_uri=redirect_uri,
        scopes=tuple(scopes),
        state=state,
        code_challenge=challenge,
        code_challenge_method=method,
        nonce=nonce or None,
        prompt=prompt,
        max_age=int(max_age) if max_age is not None else None,
        login_hint=(single("login_hint") or "")[:MAX_LOGIN_HINT] or None,
    )


def nonce_in_use(session: Session, application_id: int, nonce: str) -> bool:
    """Whether a code of the application that has not expired carries this nonce: a request
    replayed within its code's life is refused (oidc.md, ID token)."""
    found = session.scalar(
        select(AuthorizationCode.id)
        .where(
            AuthorizationCode.application_id == application_id,
            AuthorizationCode.nonce == nonce,
            AuthorizationCode.expires_at > utcnow(),
        )
        .limit(1)
    )
    return found is not None


def holds_grant(session: Session, user_id: int, request: AuthorizationRequest) -> bool:
    """Whether the user granted the application every scope asked, under its present scopes,
    and has not taken it back: what lets `prompt=none` skip the consent screen."""
    live = session.execute(
        select(Grant.scope)
        .join(Application, Application.id == Grant.application_id)
        .where(
            Grant.user_id == user_id,
            Grant.application_id == request.application_id,
            Grant.revoked_at.is_(None),
            Grant.app_scopes_version == Application.scopes_version,
        )
    ).scalars()
    asked = set(request.scopes)
    return any(asked <= set(parse_scopes(scope)) for scope in live)


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
    session: Session,
    actor: Actor,
    request: AuthorizationRequest,
    user_id: int,
    issuer: str,
    *,
    auth_time: dt.datetime | None = None,
    sid: str | None = None,
) -> str:
    """The user granted everything asked: a code for the application. Returns the redirect.
    `auth_time` (when the user signed in) and `sid` (their web session's hash) go into the ID
    token of an OpenID request."""
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
            nonce=request.nonce,
            auth_time=auth_time,
            sid=sid,
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
    return error_redirect(request, "access_denied", "The user denied the request.", issuer)


def error_redirect(request: AuthorizationRequest, error: str, description: str, issuer: str) -> str:
    """`error` back to the application, with `state` and `iss` (RFC 6749 4.1.2.1, RFC 9207)."""
    reply = [("error", error), ("error_description", description)]
    if request.state is not None:
        reply.append(("state", request.state))
    reply.append(("iss", issuer))
    return with_params(request.redirect_uri, reply)
