"""Registering and managing OAuth applications (operator.md: `regdesk apps ...`).

Every change is written with an audit event in the same transaction. A change of scopes bumps
`scopes_version`, which makes the application's existing grants stop refreshing (api.md 5.1.5).
What a suspension or a scope's removal takes from tokens already issued, it takes for good
(decisions.md, Scopes): the application records when (`tokens_valid_after`, `scope_cutoffs`)
and the token readers (oauth/tokens.py) hold every token to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_changes, record_event
from regdesk.db import sync_sequences, utcnow
from regdesk.errors import Invalid
from regdesk.oauth.grants import end_access
from regdesk.oauth.models import Application
from regdesk.oauth.scopes import Holder, ScopeError, check_scopes, format_scopes, parse_scopes
from regdesk.oauth.tokens import TokenKind, cutoff_key
from regdesk.security import hash_client_secret, new_secret
from regdesk.transport import is_loopback

MIN_IMPORTED_SECRET_LENGTH = 16
ID_TOKEN_ALGORITHMS = ("RS256", "ES256")  # oidc.md: RS256 by default, ES256 per application
DEFAULT_ID_TOKEN_ALG = ID_TOKEN_ALGORITHMS[0]


class ApplicationNotFound(LookupError):
    pass


def check_redirect_uri(uri: str) -> str:
    """An absolute redirect URI: https, http on a loopback host, or a private-use scheme; else
    ValueError saying why.

    Private-use schemes (`com.example.app:/cb`, RFC 8252 7.1) must contain a dot, so that
    they name a domain the application's author controls.
    """
    parts = urlsplit(uri)
    if parts.fragment or "#" in uri:
        raise ValueError(f"redirect URI {uri!r} may not contain a fragment (RFC 6749 3.1.2)")
    if parts.scheme == "https" and parts.hostname:
        return uri
    if parts.scheme == "http" and parts.hostname:
        if is_loopback(parts.hostname):
            return uri
        raise ValueError(f"redirect URI {uri!r}: plain http is allowed only on loopback")
    if parts.scheme and "." in parts.scheme and parts.scheme not in ("http", "https"):
        return uri
    raise ValueError(f"redirect URI {uri!r} is not an absolute https URI")


def check_post_logout_redirect_uri(uri: str) -> str:
    """Where /oauth/end-session may send users back to: the rules of a redirect URI (oidc.md),
    its ValueError naming it for what it is. The CLI and the admin form both ask this."""
    try:
        return check_redirect_uri(uri)
    except ValueError as exc:
        raise ValueError(str(exc).replace("redirect URI", "post-logout redirect URI")) from None


class _Fields:
    """The fields of a registration or a change, each checked, the errors collected: Invalid
    names every bad one (keys are the admin form's field names)."""

    def __init__(self) -> None:
        self.errors: dict[str, str] = {}

    def name(self, value: str) -> str:
        if not value.strip():
            self.errors["name"] = "may not be empty"
        return value.strip()

    def redirect_uris(self, uris: Sequence[str]) -> list[str]:
        try:
            return [check_redirect_uri(uri) for uri in dict.fromkeys(uris)]
        except ValueError as exc:
            self.errors["redirect_uris"] = str(exc)
            return []

    def post_logout_redirect_uris(self, uris: Sequence[str]) -> list[str]:
        try:
            return [check_post_logout_redirect_uri(uri) for uri in dict.fromkeys(uris)]
        except ValueError as exc:
            self.errors["post_logout_redirect_uris"] = str(exc)
            return []

    def id_token_alg(self, value: str) -> str:
        if value not in ID_TOKEN_ALGORITHMS:
            self.errors["id_token_alg"] = f"must be one of {', '.join(ID_TOKEN_ALGORITHMS)}"
        return value

    def scopes(self, field: str, value: str, holder: Holder) -> str:
        try:
            return format_scopes(check_scopes(parse_scopes(value), holder))
        except ScopeError as exc:
            self.errors[field] = str(exc)
            return ""

    def done(self) -> None:
        if self.errors:
            raise Invalid(self.errors)


def create_application(
    session: Session,
    actor: Actor,
    *,
    name: str,
    description: str = "",
    redirect_uris: Sequence[str] = (),
    obo_scopes: str = "",
    service_scopes: str = "",
    client_id: int | None = None,
    client_secret: str | None = None,
    post_logout_redirect_uris: Sequence[str] = (),
    id_token_alg: str = DEFAULT_ID_TOKEN_ALG,
) -> tuple[Application, str]:
    """Register an application; returns it with its client secret, which is shown this once.

    `client_id` and `client_secret` keep credentials that tools already hold, for an
    organizer moving from another instance (operator.md).
    """
    fields = _Fields()
    checked_name = fields.name(name)
    uris = fields.redirect_uris(redirect_uris)
    obo = fields.scopes("obo_scopes", obo_scopes, Holder.OBO)
    service = fields.scopes("service_scopes", service_scopes, Holder.SERVICE)
    logout_uris = fields.post_logout_redirect_uris(post_logout_redirect_uris)
    algorithm = fields.id_token_alg(id_token_alg)
    if client_secret is not None and len(client_secret) < MIN_IMPORTED_SECRET_LENGTH:
        fields.errors["client_secret"] = f"must be at least {MIN_IMPORTED_SECRET_LENGTH} characters"
    if client_id is not None:
        if client_id < 1:
            fields.errors["client_id"] = "must be a positive integer"
        elif session.get(Application, client_id) is not None:
            fields.errors["client_id"] = f"{client_id} is already registered"
    fields.done()
    secret = client_secret if client_secret is not None else new_secret()
    now = utcnow()
    application = Application(
        id=client_id,
        name=checked_name,
        description=description,
        secret_hash=hash_client_secret(secret),
        redirect_uris=uris,
        obo_scopes=obo,
        service_scopes=service,
        post_logout_redirect_uris=logout_uris,
        id_token_alg=algorithm,
        scopes_version=1,
        suspended=False,
        created_at=now,
        updated_at=now,
    )
    session.add(application)
    session.flush()
    if client_id is not None:
        sync_sequences(session, Application.__tablename__)
    record_event(
        session,
        actor,
        "app.created",
        target_type="application",
        target_id=application.id,
        details={"name": application.name, "imported_credentials": client_secret is not None},
    )
    return application, secret


def get_application(session: Session, client_id: int) -> Application:
    application = session.get(Application, client_id)
    if application is None:
        raise ApplicationNotFound(f"no application with client id {client_id}")
    return application


def list_applications(session: Session) -> list[Application]:
    return list(session.scalars(select(Application).order_by(Application.id)))


def update_application(
    session: Session,
    actor: Actor,
    client_id: int,
    *,
    name: str | None = None,
    description: str | None = None,
    redirect_uris: Sequence[str] | None = None,
    obo_scopes: str | None = None,
    service_scopes: str | None = None,
    post_logout_redirect_uris: Sequence[str] | None = None,
    id_token_alg: str | None = None,
) -> Application:
    """Change what is given; leave the rest. Returns the application as it now is."""
    application = get_application(session, client_id)
    fields = _Fields()
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = fields.name(name)
    if description is not None:
        changes["description"] = description
    if redirect_uris is not None:
        changes["redirect_uris"] = fields.redirect_uris(redirect_uris)
    if obo_scopes is not None:
        changes["obo_scopes"] = fields.scopes("obo_scopes", obo_scopes, Holder.OBO)
    if service_scopes is not None:
        changes["service_scopes"] = fields.scopes("service_scopes", service_scopes, Holder.SERVICE)
    if post_logout_redirect_uris is not None:
        uris = fields.post_logout_redirect_uris(post_logout_redirect_uris)
        changes["post_logout_redirect_uris"] = uris
    if id_token_alg is not None:
        changes["id_token_alg"] = fields.id_token_alg(id_token_alg)
    fields.done()
    before = {
        TokenKind.OBO: application.obo_scopes,
        TokenKind.SERVICE: application.service_scopes,
    }
    changed = record_changes(
        session, actor, application, changes, action="app.updated", target_type="application"
    )
    if {"obo_scopes", "service_scopes"} & set(changed):
        application.scopes_version += 1
        _cut_removed_scopes(application, before)
    return application


def _cut_removed_scopes(application: Application, before: dict[TokenKind, str]) -> None:
    """Tokens issued until now never hold again a scope removed now, even when given back."""
    now = utcnow().isoformat()
    after = {TokenKind.OBO: application.obo_scopes, TokenKind.SERVICE: application.service_scopes}
    removed = {
        cutoff_key(kind, scope): now
        for kind, scopes in before.items()
        for scope in set(parse_scopes(scopes)) - set(parse_scopes(after[kind]))
    }
    if removed:
        application.scope_cutoffs = {**(application.scope_cutoffs or {}), **removed}


def set_suspended(session: Session, actor: Actor, client_id: int, suspended: bool) -> Application:
    """Suspend or reinstate an application. A suspension ends, at once and for good, every
    token and grant it holds and every code not yet redeemed: reinstated, it starts anew."""
    application = get_application(session, client_id)
    if application.suspended != suspended:
        application.suspended = suspended
        application.updated_at = utcnow()
        details = None
        if suspended:
            application.tokens_valid_after = application.updated_at
            ended = end_access(session, reason="application_suspended", application_id=client_id)
            details = {"grants_revoked": len(ended)}
        record_event(
            session,
            actor,
            "app.suspended" if suspended else "app.unsuspended",
            target_type="application",
            target_id=application.id,
            details=details,
        )
    return application


def rotate_secret(session: Session, actor: Actor, client_id: int) -> tuple[Application, str]:
    """A new client secret; the old one stops working at once. Returns the new secret."""
    application = get_application(session, client_id)
    secret = new_secret()
    application.secret_hash = hash_client_secret(secret)
    application.secret_rotated_at = application.updated_at = utcnow()
    record_event(
        session, actor, "app.secret_rotated", target_type="application", target_id=application.id
    )
    return application, secret
