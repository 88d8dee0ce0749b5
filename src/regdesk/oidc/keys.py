"""The keys ID tokens are signed with: the key store's (regdesk.keys), one purpose per
algorithm because the store keeps one key in use per purpose: "oidc" (RS256, every
application's default) and "oidc-es256" (for applications registered for ES256).

`GET /oauth/jwks` publishes both keys in use and every retired one still inside
REGDESK_KEY_OVERLAP, so that an ID token signed just before a rotation still verifies.
"""

from __future__ import annotations

import datetime as dt
import threading

from joserfc.jwk import ECKey, RSAKey
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from regdesk.keys import PrivateKey, PublicKey, public_key_of, retire, signing_key
from regdesk.keys.models import SigningKey
from regdesk.keys.store import Bind

PURPOSES = {"RS256": "oidc", "ES256": "oidc-es256"}
ALGORITHMS = tuple(PURPOSES)  # id_token_signing_alg_values_supported
DEFAULT_ALGORITHM = "RS256"


class IdTokenKeys:
    """A process's ID token keys, decrypted once per key: each signature asks the store which
    key is in use (one indexed read), so a rotation made by any process shows at the next."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, PrivateKey] = {}

    def key(self, bind: Bind, algorithm: str) -> PrivateKey:
        purpose = PURPOSES[algorithm]
        in_use = bind.scalar(
            select(SigningKey.kid).where(
                SigningKey.purpose == purpose, SigningKey.retired_at.is_(None)
            )
        )
        with self._lock:
            known = self._keys.get(algorithm)
            if known is None or known.kid != in_use:
                known = self._keys[algorithm] = signing_key(bind, purpose, algorithm)
            return known


def jose_key(key: PrivateKey) -> RSAKey | ECKey:
    """The key as joserfc (which Authlib signs with) takes it."""
    if key.algorithm == "ES256":
        return ECKey.import_key(key.key)  # type: ignore[arg-type]
    return RSAKey.import_key(key.key)  # type: ignore[arg-type]


def ensure_keys(session: Session) -> None:
    """Every algorithm's key made once, at start: the JWKS is then never empty, nor a write."""
    for algorithm, purpose in PURPOSES.items():
        signing_key(session, purpose, algorithm)


def published_keys(bind: Bind, overlap: dt.timedelta, now: dt.datetime) -> list[PublicKey]:
    """The keys in use and every retired one still inside its overlap, newest first."""
    rows = bind.execute(
        select(
            SigningKey.purpose,
            SigningKey.kid,
            SigningKey.algorithm,
            SigningKey.public_key,
            SigningKey.retired_at,
        )
        .where(
            SigningKey.purpose.in_(PURPOSES.values()),
            or_(SigningKey.retired_at.is_(None), SigningKey.retired_at > now - overlap),
        )
        .order_by(SigningKey.created_at.desc(), SigningKey.kid)
    )
    return [public_key_of(*row) for row in rows]


def rotate(session: Session) -> dict[str, tuple[str | None, str]]:
    """Every ID token key retired and a new one made: by algorithm, (old kid, new kid)."""
    rotated = {}
    for algorithm, purpose in PURPOSES.items():
        old = retire(session, purpose)
        rotated[algorithm] = (old, signing_key(session, purpose, algorithm).kid)
    return rotated
