"""OAuth 2.0 applications, grants, authorization codes and tokens.

Every secret here is stored as a hash only (decisions.md, Tokens): client secrets as a salted
HMAC-SHA-256, codes and tokens as SHA-256 hex digests looked up by equality.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class Application(Base):
    """A registered client. Its `id` is the decimal `client_id` (decisions.md, Identifiers)."""

    __tablename__ = "oauth_applications"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    secret_hash: Mapped[str] = mapped_column(String(200))
    redirect_uris: Mapped[list[str]] = mapped_column(JSON, default=list)
    obo_scopes: Mapped[str] = mapped_column(String(1000), default="")  # space-separated
    service_scopes: Mapped[str] = mapped_column(String(1000), default="")  # space-separated
    # Bumped whenever the scopes change: grants made under an older version stop refreshing.
    scopes_version: Mapped[int] = mapped_column(Integer, default=1)
    suspended: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    secret_rotated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # decisions.md, Scopes: what a suspension or a scope's removal ends stays ended, whatever
    # is given back later. Tokens issued at or before `tokens_valid_after` (the last
    # suspension) are dead; a token issued at or before `scope_cutoffs["obo:pii:email"]` (an
    # ISO timestamp: when that OBO scope was last removed) never holds that scope again.
    tokens_valid_after: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    scope_cutoffs: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    # OpenID Connect (oidc.md): where /oauth/end-session may send its users back to (exact
    # match), and how its ID tokens are signed.
    post_logout_redirect_uris: Mapped[list[str]] = mapped_column(JSON, default=list)
    id_token_alg: Mapped[str] = mapped_column(String(8), default="RS256")


class Grant(Base):
    """One authorization a user gave an application: the family of every token it begets."""

    __tablename__ = "oauth_grants"
    __table_args__ = (Index("ix_oauth_grants_user_id_application_id", "user_id", "application_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    application_id: Mapped[int] = mapped_column(
        ForeignKey("oauth_applications.id", ondelete="CASCADE")
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    scope: Mapped[str] = mapped_column(String(1000))
    app_scopes_version: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    revoked_reason: Mapped[str | None] = mapped_column(String(64))
    # The sign-in behind it, from its code: what ID tokens issued on refresh say (oidc.md).
    auth_time: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    sid: Mapped[str | None] = mapped_column(String(64))


class AuthorizationCode(Base):
    __tablename__ = "oauth_authorization_codes"
    __table_args__ = (
        Index("ix_oauth_authorization_codes_expires_at", "expires_at"),
        # A user's revocation and an administrator's reset end the user's codes (grants.py).
        Index("ix_oauth_authorization_codes_user_id_application_id", "user_id", "application_id"),
        # A nonce is refused while a live code of its application carries it (oidc.md).
        Index("ix_oauth_authorization_codes_application_id_nonce", "application_id", "nonce"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    application_id: Mapped[int] = mapped_column(
        ForeignKey("oauth_applications.id", ondelete="CASCADE")
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    redirect_uri: Mapped[str] = mapped_column(Text)
    scope: Mapped[str] = mapped_column(String(1000))
    code_challenge: Mapped[str | None] = mapped_column(String(128))
    code_challenge_method: Mapped[str | None] = mapped_column(String(10))
    # The grant created when the code was redeemed; a replay revokes it (decisions.md).
    grant_id: Mapped[int | None] = mapped_column(ForeignKey("oauth_grants.id", ondelete="SET NULL"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # OpenID Connect (oidc.md): the request's nonce, when the user signed in (the web
    # session's start) and a stable hash of that session (`sid`), for the ID token.
    nonce: Mapped[str | None] = mapped_column(String(255))
    auth_time: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    sid: Mapped[str | None] = mapped_column(String(64))


class AccessToken(Base):
    __tablename__ = "oauth_access_tokens"
    __table_args__ = (
        Index("ix_oauth_access_tokens_expires_at", "expires_at"),
        Index("ix_oauth_access_tokens_grant_id", "grant_id"),
        Index("ix_oauth_access_tokens_application_id", "application_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    application_id: Mapped[int] = mapped_column(
        ForeignKey("oauth_applications.id", ondelete="CASCADE")
    )
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    grant_id: Mapped[int | None] = mapped_column(ForeignKey("oauth_grants.id", ondelete="CASCADE"))
    scope: Mapped[str] = mapped_column(String(1000))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class RefreshToken(Base):
    """Never expires by time (api.md 3.2): it dies when consumed, or when its grant does."""

    __tablename__ = "oauth_refresh_tokens"
    __table_args__ = (Index("ix_oauth_refresh_tokens_grant_id", "grant_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    grant_id: Mapped[int] = mapped_column(ForeignKey("oauth_grants.id", ondelete="CASCADE"))
    scope: Mapped[str] = mapped_column(String(1000))
    access_token_id: Mapped[int | None] = mapped_column(
        ForeignKey("oauth_access_tokens.id", ondelete="SET NULL")
    )
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    consumed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class UserPermission(Base):
    """A named permission held by a user: `admin`, or a sensitive scope's name (decisions.md)."""

    __tablename__ = "user_permissions"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
