"""Hashing of every secret regdesk keeps: passwords, client secrets, tokens and codes.

Passwords are low-entropy, so they get a slow password hash (argon2id). Client secrets,
tokens and codes are random and long, so a fast hash is right (decisions.md, Tokens): a
salted HMAC-SHA-256 for client secrets, a plain SHA-256 for what is looked up by its hash.
What must be read back (a TOTP secret, a signing key) is encrypted under a key derived from the
instance's secret key, one key per kind (`derived_fernet`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SERVICE_PASSWORD_HASHER = PasswordHasher()  # argon2id with argon2-cffi's RFC 9106 defaults
_password_hasher = SERVICE_PASSWORD_HASHER

SECRET_HASH_SCHEME = "hmac-sha256"


def hash_password(password: str) -> str:
    return _password_hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    if not password_hash:
        return False
    try:
        return _password_hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def is_password_hash(value: str) -> bool:
    """Whether `value` looks like an argon2 hash that we can verify against (for imports)."""
    return value.startswith(("$argon2id$", "$argon2i$", "$argon2d$")) and value.count("$") >= 4


def b64url(raw: bytes) -> str:
    """base64url without its padding: JWKs' numbers, key thumbprints, stored token keys, page
    cursors."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def new_secret(nbytes: int = 32) -> str:
    """A random secret with at least 256 bits, URL-safe."""
    return secrets.token_urlsafe(nbytes)


def hash_client_secret(secret: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hmac.new(salt, secret.encode(), hashlib.sha256).hexdigest()
    return f"{SECRET_HASH_SCHEME}${base64.urlsafe_b64encode(salt).decode()}${digest}"


def verify_client_secret(stored: str, secret: str) -> bool:
    scheme, _, rest = stored.partition("$")
    salt_b64, _, digest = rest.partition("$")
    if scheme != SECRET_HASH_SCHEME or not digest:
        return False
    salt = base64.urlsafe_b64decode(salt_b64)
    candidate = hmac.new(salt, secret.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(candidate, digest)


def token_hash(token: str) -> str:
    """The lookup key of an access token, refresh token or authorization code."""
    return hashlib.sha256(token.encode()).hexdigest()


def derived_fernet(secret_key: str, label: str) -> Fernet:
    """A key of its own for one kind of secret kept encrypted (its `label`), derived from the
    instance's secret key (HKDF-SHA-256): a copy of the database alone reads none of them."""
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=label.encode()).derive(
        secret_key.encode()
    )
    return Fernet(base64.urlsafe_b64encode(derived))
