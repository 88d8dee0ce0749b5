"""The instance's signing keys: one table for every purpose (ticket codes now; webhook
signatures and OpenID Connect next), each key with its algorithm, its public half in the clear
and its private half encrypted (regdesk.keys.store)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class SigningKey(Base):
    __tablename__ = "signing_keys"
    __table_args__ = (
        # One key in use per purpose: two processes making the first one at once keep one.
        Index(
            "uq_signing_keys_active",
            "purpose",
            unique=True,
            sqlite_where=text("retired_at IS NULL"),
            postgresql_where=text("retired_at IS NULL"),
        ),
    )

    # The RFC 7638 thumbprint of the public key's JWK: what a JWKS and a JWS header name it by.
    kid: Mapped[str] = mapped_column(String(64), primary_key=True)
    purpose: Mapped[str] = mapped_column(String(32))  # "ticket", later "webhook", "oidc"
    algorithm: Mapped[str] = mapped_column(String(16))  # JOSE names: EdDSA, RS256, ES256
    public_key: Mapped[str] = mapped_column(Text)  # PEM (SubjectPublicKeyInfo)
    private_key_encrypted: Mapped[str] = mapped_column(Text)  # Fernet token of the PKCS#8 PEM
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # Retired: signs nothing more, still verifies what it signed.
    retired_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
