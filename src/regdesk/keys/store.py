"""The key store: each purpose's signing key, made once per instance, kept with its private
half encrypted under a key derived from the instance's secret key (security.derived_fernet,
label "regdesk signing key"), never logged, never shown.

A purpose has at most one key in use; retiring it makes the next signature use a new one,
while everything the old one signed still verifies: `public_keys` lists retired keys too, and
is what a JWKS publishes. Keys are looked up through the caller's own connection, so making the
first one inside a write transaction takes no second one (SQLite has a single write lock).
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from cryptography.fernet import InvalidToken
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from sqlalchemy import Connection, Engine, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session
from sqlalchemy.pool import Pool

from regdesk.db import is_sqlite, utcnow
from regdesk.db.instance import InstanceSetting
from regdesk.keys.models import SigningKey
from regdesk.security import b64url, derived_fernet

Bind = Session | Connection
PrivateKeyType = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
PublicKeyType = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey
_LABEL = "regdesk signing key"
_log = logging.getLogger("regdesk.keys")

# The algorithms a key may have (JOSE names), each with how to make one: EdDSA signs ticket
# codes; RS256 and ES256 are for webhook signatures and OpenID Connect.
GENERATORS: dict[str, Callable[[], PrivateKeyType]] = {
    "EdDSA": ed25519.Ed25519PrivateKey.generate,
    "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "RS256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
}


class KeyUnreadable(RuntimeError):
    """The private key cannot be decrypted: the instance's secret key changed since it was
    made. Retire it (`retire`) to sign with a new one."""


@dataclass(frozen=True)
class PublicKey:
    kid: str
    purpose: str
    algorithm: str
    key: PublicKeyType
    retired: bool

    def pem(self) -> str:
        return _public_pem(self.key)

    def jwk(self) -> dict[str, str]:
        """RFC 7517 (with RFC 8037 for Ed25519): the key as a JWKS lists it."""
        return {**_jwk_members(self.key), "kid": self.kid, "alg": self.algorithm, "use": "sig"}


@dataclass(frozen=True, repr=False)
class PrivateKey:
    kid: str
    algorithm: str
    key: PrivateKeyType

    def sign(self, message: bytes) -> bytes:
        """The signature, raw: Ed25519's 64 bytes (deterministic, RFC 8032), ES256's r || s,
        RS256's PKCS#1 v1.5."""
        key = self.key
        if isinstance(key, ed25519.Ed25519PrivateKey):
            return key.sign(message)
        if isinstance(key, ec.EllipticCurvePrivateKey):
            r, s = decode_dss_signature(key.sign(message, ec.ECDSA(hashes.SHA256())))
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return key.sign(message, padding.PKCS1v15(), hashes.SHA256())

    def __repr__(self) -> str:  # never the key itself, in a log or a traceback
        return f"PrivateKey(kid={self.kid!r}, algorithm={self.algorithm!r})"


# --- the store ------------------------------------------------------------------------------


def signing_key(bind: Bind, purpose: str, algorithm: str) -> PrivateKey:
    """The purpose's key in use, made now when there is none (the first time an instance needs
    it, or after the last one was retired)."""
    row = _in_use(bind, purpose)
    if row is None:
        _add(bind, purpose, algorithm)
        row = _in_use(bind, purpose)
        assert row is not None
    if row.algorithm != algorithm:
        raise LookupError(f"the {purpose} key is {row.algorithm}, not {algorithm}")
    try:
        pem = _decrypted(bind, row)
    except KeyUnreadable:
        # Made under another instance secret: the operator rotated REGDESK_SECRET_KEY (as the
        # README allows). The old key is retired, so what it signed still verifies, and a new
        # one made under the secret in use; a service that would not start is no answer.
        _log.warning("the %s key %s was made under another secret key: retired", purpose, row.kid)
        retire(bind, purpose)
        _add(bind, purpose, algorithm)
        row = _in_use(bind, purpose)
        assert row is not None
        pem = _decrypted(bind, row)
    # Our own key: Fernet authenticated it as the one `_add` wrote, so the RSA consistency
    # check (12 to 35 ms a load here, at every start) would only check what we made ourselves.
    key = serialization.load_pem_private_key(
        pem, password=None, unsafe_skip_rsa_key_validation=True
    )
    assert isinstance(key, PrivateKeyType)
    return PrivateKey(row.kid, row.algorithm, key)


def _decrypted(bind: Bind, row: Any) -> bytes:
    try:
        pem: bytes = derived_fernet(instance_secret(bind), _LABEL).decrypt(
            row.private_key_encrypted
        )
    except InvalidToken:
        raise KeyUnreadable(f"the key {row.kid} cannot be decrypted") from None
    return pem


def public_keys(bind: Bind, purpose: str) -> list[PublicKey]:
    """Every key of the purpose, the retired ones too (they still verify), oldest first."""
    rows = bind.execute(
        select(SigningKey.kid, SigningKey.algorithm, SigningKey.public_key, SigningKey.retired_at)
        .where(SigningKey.purpose == purpose)
        .order_by(SigningKey.created_at, SigningKey.kid)
    )
    return [public_key_of(purpose, *row) for row in rows]


def public_key_of(
    purpose: str, kid: str, algorithm: str, pem: str, retired_at: object
) -> PublicKey:
    key = serialization.load_pem_public_key(pem.encode())
    assert isinstance(key, PublicKeyType)
    return PublicKey(kid, purpose, algorithm, key, retired_at is not None)


def retire(bind: Bind, purpose: str) -> str | None:
    """The purpose's key in use signs nothing more (it still verifies); the next signature
    makes a new one. The retired key's kid, or None when none was in use."""
    row = _in_use(bind, purpose)
    if row is None:
        return None
    bind.execute(
        update(SigningKey)
        .where(SigningKey.kid == row.kid, SigningKey.retired_at.is_(None))
        .values(retired_at=utcnow())
    )
    return str(row.kid)


def _in_use(bind: Bind, purpose: str) -> Any:
    return bind.execute(
        select(SigningKey.kid, SigningKey.algorithm, SigningKey.private_key_encrypted).where(
            SigningKey.purpose == purpose, SigningKey.retired_at.is_(None)
        )
    ).first()


def _add(bind: Bind, purpose: str, algorithm: str) -> None:
    """A new key in use for the purpose, unless a racing process made one first (the partial
    unique index keeps one: this insert then does nothing)."""
    key = GENERATORS[algorithm]()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key()
    dialect_insert = sqlite_insert if is_sqlite(bind) else pg_insert
    bind.execute(
        dialect_insert(SigningKey)
        .values(
            kid=thumbprint(public),
            purpose=purpose,
            algorithm=algorithm,
            public_key=_public_pem(public),
            private_key_encrypted=derived_fernet(instance_secret(bind), _LABEL)
            .encrypt(pem)
            .decode(),
            created_at=utcnow(),
        )
        .on_conflict_do_nothing()
    )


# --- JWK ------------------------------------------------------------------------------------


def thumbprint(key: PublicKeyType) -> str:
    """RFC 7638: the SHA-256 of the JWK's required members, base64url: the key's `kid`."""
    canonical = json.dumps(_jwk_members(key), sort_keys=True, separators=(",", ":"))
    return b64url(hashlib.sha256(canonical.encode()).digest())


def _jwk_members(key: PublicKeyType) -> dict[str, str]:
    if isinstance(key, ed25519.Ed25519PublicKey):
        raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"crv": "Ed25519", "kty": "OKP", "x": b64url(raw)}
    if isinstance(key, ec.EllipticCurvePublicKey):
        numbers = key.public_numbers()
        return {
            "crv": "P-256",
            "kty": "EC",
            "x": b64url(numbers.x.to_bytes(32, "big")),
            "y": b64url(numbers.y.to_bytes(32, "big")),
        }
    rsa_numbers = key.public_numbers()
    return {
        "e": b64url(_unsigned(rsa_numbers.e)),
        "kty": "RSA",
        "n": b64url(_unsigned(rsa_numbers.n)),
    }


def _public_pem(key: PublicKeyType) -> str:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def _unsigned(number: int) -> bytes:
    return number.to_bytes((number.bit_length() + 7) // 8, "big")


# --- the instance's secret key --------------------------------------------------------------

# The secret each running app was given (REGDESK_SECRET_KEY, or the one the database keeps),
# by its engine's connection pool, which the engine's option-bearing copies share.
_INSTALLED: WeakKeyDictionary[Pool, str] = WeakKeyDictionary()


def install(engine: Engine, secret_key: str) -> None:
    """Tells the store the instance's secret key for this engine (the app does, at start)."""
    _INSTALLED[engine.pool] = secret_key


def instance_secret(bind: Bind) -> str:
    """The secret key the store encrypts with: the one installed for this database's engine
    (the app and the command line install the configured one, REGDESK_SECRET_KEY, at start),
    else the one the database keeps (made now, through the caller's connection, when the
    database has none yet: db/instance.py's rule)."""
    pool = (bind.connection() if isinstance(bind, Session) else bind).engine.pool
    installed = _INSTALLED.get(pool)
    if installed is not None:
        return installed
    kept = select(InstanceSetting.value).where(InstanceSetting.key == "secret_key")
    found = bind.scalar(kept)
    if found is None:
        dialect_insert = sqlite_insert if is_sqlite(bind) else pg_insert
        bind.execute(
            dialect_insert(InstanceSetting)
            .values(key="secret_key", value=_new_instance_secret(), created_at=utcnow())
            .on_conflict_do_nothing()
        )
        found = bind.scalar(kept)
    assert isinstance(found, str)
    return found


def _new_instance_secret() -> str:
    return secrets.token_urlsafe(48)  # as db/instance.py makes it
