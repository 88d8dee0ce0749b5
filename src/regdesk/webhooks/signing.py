"""The webhooks' signature (events.md, Delivery): an RS256 JWT made with joserfc, signed with
the instance's webhook key from the key store (regdesk.keys), and the public keys a receiver
verifies it with (`GET /api/webhooks/key`, `GET /api/webhooks/keys`).

Claims: `iss` the instance's issuer, `sub` "webhook", `aud` the endpoint's URL, `iat`, `exp`
(`iat` + 120), `int` (standard base64 of the SHA-256 of the body's `data` bytes) and `jti` (the
attempt's id); header `kid`. `regdesk keys rotate` retires the key: the next signature makes a
new one, and the old one stays published for REGDESK_KEY_OVERLAP.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import threading

from joserfc import jwt
from joserfc.jwk import RSAKey
from sqlalchemy import Connection, Engine, or_, select
from sqlalchemy.orm import Session

from regdesk.db import write_session
from regdesk.keys import PrivateKey, PublicKey, public_key_of, retire, signing_key
from regdesk.keys.models import SigningKey
from regdesk.keys.store import Bind

PURPOSE = "webhook"
ALGORITHM = "RS256"
LIFETIME = 120  # seconds: `exp` - `iat`
SUBJECT = "webhook"


def integrity(data: bytes) -> str:
    """`int`: standard base64 (with padding) of the SHA-256 of the `data` member's bytes."""
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def token(key: PrivateKey, *, issuer: str, audience: str, data: bytes, jti: str, now: int) -> str:
    claims = {
        "iss": issuer,
        "sub": SUBJECT,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME,
        "int": integrity(data),
        "jti": jti,
    }
    header = {"alg": ALGORITHM, "typ": "JWT", "kid": key.kid}
    return jwt.encode(header, claims, RSAKey.import_key(key.key))  # type: ignore[arg-type]


class Signer:
    """A process's webhook key, decrypted once per key: each signature asks the store which key
    is in use (one indexed read), so a rotation made by any process shows at the next one."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._key: PrivateKey | None = None

    def key(self, connection: Connection | None = None) -> PrivateKey:
        """The key in use, asked on `connection` (the caller's, when it has one open)."""
        if connection is None:
            with self.engine.connect() as own:
                return self.key(own)
        in_use = connection.scalar(
            select(SigningKey.kid).where(
                SigningKey.purpose == PURPOSE, SigningKey.retired_at.is_(None)
            )
        )
        with self._lock:
            if self._key is None or self._key.kid != in_use:
                with write_session(self.engine) as session:
                    self._key = signing_key(session, PURPOSE, ALGORITHM)
            return self._key


def current_key(session: Session) -> PublicKey:
    """The public half of the key in use (made now when there is none)."""
    key = signing_key(session, PURPOSE, ALGORITHM)
    return published_keys(session, dt.timedelta(0), dt.datetime.now(dt.UTC), only=key.kid)[0]


def published_keys(
    bind: Bind, overlap: dt.timedelta, now: dt.datetime, *, only: str | None = None
) -> list[PublicKey]:
    """The key in use and every retired one still inside its overlap, newest first."""
    query = (
        select(SigningKey.kid, SigningKey.algorithm, SigningKey.public_key, SigningKey.retired_at)
        .where(
            SigningKey.purpose == PURPOSE,
            or_(SigningKey.retired_at.is_(None), SigningKey.retired_at > now - overlap),
        )
        .order_by(SigningKey.created_at.desc(), SigningKey.kid)
    )
    if only is not None:
        query = query.where(SigningKey.kid == only)
    return [public_key_of(PURPOSE, *row) for row in bind.execute(query)]


def rotate(session: Session) -> tuple[str | None, str]:
    """The webhook key retired and a new one made: (the old kid or None, the new kid)."""
    old = retire(session, PURPOSE)
    return old, signing_key(session, PURPOSE, ALGORITHM).kid
