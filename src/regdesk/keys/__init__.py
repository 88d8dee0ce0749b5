"""The instance's signing keys (regdesk.keys.store): ticket codes are signed with one now;
webhook signatures and OpenID Connect will keep theirs here too."""

from regdesk.keys.store import (
    GENERATORS,
    KeyUnreadable,
    PrivateKey,
    PublicKey,
    install,
    public_key_of,
    public_keys,
    retire,
    signing_key,
    thumbprint,
)

__all__ = [
    "GENERATORS",
    "KeyUnreadable",
    "PrivateKey",
    "PublicKey",
    "install",
    "public_key_of",
    "public_keys",
    "retire",
    "signing_key",
    "thumbprint",
]
