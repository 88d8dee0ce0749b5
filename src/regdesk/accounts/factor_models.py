"""A person's second factors (accounts.md, Second factor): an authenticator app (TOTP, one per
person), security keys (WebAuthn, as many as they like) and ten single-use recovery codes.

No secret is kept in clear: the TOTP secret, which must stay usable to check codes, is
encrypted under a key derived from the instance's secret key (factors.py); a recovery code is
kept as its SHA-256 (it is random, so a hash is enough); a security key holds only its public
key.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class TotpFactor(Base):
    """An authenticator app; it counts once confirmed with a code (`confirmed_at`)."""

    __tablename__ = "totp_factors"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), unique=True)
    secret_encrypted: Mapped[str] = mapped_column(String(200))  # Fernet token of the secret
    # The last 30-second step whose code was accepted: a code is good once (no replay).
    last_used_step: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    confirmed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class SecurityKey(Base):
    """A WebAuthn credential: its public key and the signature counter it last reported."""

    __tablename__ = "security_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    credential_id: Mapped[str] = mapped_column(String(1400), unique=True)  # base64url
    public_key: Mapped[bytes] = mapped_column(LargeBinary)  # COSE
    sign_count: Mapped[int] = mapped_column(Integer, default=0)
    name: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class RecoveryCode(Base):
    """One of a person's ten recovery codes, by its SHA-256; `used_at` once it was spent."""

    __tablename__ = "recovery_codes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
