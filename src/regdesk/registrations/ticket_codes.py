"""Ticket codes (registrations.md, Pages: unguessable, verifiable offline): what a ticket's QR
code holds and a USB scanner types.

A registration keeps its own code (`ticket_code`, numbers.py: 20 characters, 100 random bits,
unique), which the attendee's page shows as text. The ticket they carry, in the QR code, is
that code signed:

    ticket    = code || base32(Ed25519(b"regdesk ticket " || code))

with the instance's ticket key (RFC 8032: deterministic, so one key gives one ticket), in RFC
4648 base32 without padding (A-Z, 2-7: the signature is the last 103 characters). Signing when
the ticket is shown, not when the registration is made, costs nothing to write (an import or
the demo signs none) and keeps every code ever issued (imported ones included) valid: a ticket
signed before the key was retired still verifies with it.

A scanner app that holds the public keys (`GET /api/v0/tickets/key`: PEM and a JWKS, retired
keys included) tells a forged ticket from a real one without asking the server: it splits off
the signature and checks it against each key. The server does the same before it reads the
database, from the public keys it keeps in memory (`TicketKeys`). A ticket typed in lower case
(a scanner with Caps Lock on) is the same ticket.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519

from regdesk.db.driver import LoopReads, Query
from regdesk.keys import PrivateKey, PublicKey, public_key_of, public_keys, signing_key
from regdesk.keys.store import Bind

PURPOSE = "ticket"
ALGORITHM = "EdDSA"  # Ed25519 (RFC 8037's name for it)
DOMAIN = b"regdesk ticket "  # what is signed is never mistaken for another purpose's message
SIGNATURE_LENGTH = 103  # base32 of Ed25519's 64 bytes, unpadded
CODE_MAX = 64  # registrations.ticket_code's length
_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
# How long a process trusts the keys it read before it reads them again: a key made by another
# process (after a retirement) verifies here within this time.
KEYS_FRESH_SECONDS = 60.0


def signed(code: str, key: PrivateKey) -> str:
    """The ticket of the registration whose code is `code`, signed with `key`."""
    signature = base64.b32encode(key.sign(DOMAIN + code.encode())).decode().rstrip("=")
    return code + signature


def ticket_of(bind: Bind, code: str) -> str:
    """The ticket of `code`, signed with the instance's ticket key (made now if it has none)."""
    return signed(code, signing_key(bind, PURPOSE, ALGORITHM))


def ensure_key(bind: Bind) -> None:
    """The ticket key made if the instance has none yet (once, at start), so that showing a
    ticket never has to write."""
    signing_key(bind, PURPOSE, ALGORITHM)


def split(typed: str) -> tuple[str, str] | None:
    """The code and the signature (its base32 text, upper case) of what a scanner or a person
    typed; None when it cannot be a ticket (too short, too long, or not letters and digits)."""
    ticket = typed.strip()
    code, signature = ticket[:-SIGNATURE_LENGTH], ticket[-SIGNATURE_LENGTH:].upper()
    if not 0 < len(code) <= CODE_MAX or not (code.isascii() and code.isalnum()):
        return None
    if len(signature) != SIGNATURE_LENGTH or not _ALPHABET.issuperset(signature):
        return None
    return code, signature


def _signature_bytes(signature: str) -> bytes | None:
    try:
        raw = base64.b32decode(signature + "=" * (-len(signature) % 8))
    except (binascii.Error, ValueError):
        return None
    # One spelling per ticket: base32's last character carries bits decoding would drop.
    return raw if base64.b32encode(raw).decode().rstrip("=") == signature else None


def is_genuine(typed: str, keys: Iterable[PublicKey]) -> bool:
    """Whether `typed` is a ticket signed by one of the ticket `keys`."""
    return _genuine_code(typed, keys) is not None


def _genuine_code(typed: str, keys: Iterable[PublicKey]) -> str | None:
    """The code of `typed` when one of `keys` signed it. A scanner with Caps Lock on types
    every letter in the other case: the code is tried as typed, then so turned back."""
    parts = split(typed)
    if parts is None:
        return None
    typed_code, text = parts
    signature = _signature_bytes(text)
    if signature is None:
        return None
    ed25519_keys = [key.key for key in keys if isinstance(key.key, ed25519.Ed25519PublicKey)]
    for code in dict.fromkeys((typed_code, typed_code.swapcase(), typed_code.upper())):
        for key in ed25519_keys:
            try:
                key.verify(signature, DOMAIN + code.encode())
            except InvalidSignature:
                continue
            return code
    return None


# The ticket keys, as the key store keeps them (regdesk.keys.models), read on the loop.
KEY_ROWS = Query(f"""
    SELECT kid, algorithm, public_key, retired_at FROM signing_keys
    WHERE purpose = '{PURPOSE}' ORDER BY created_at, kid
""")  # noqa: S608 (a constant of ours)

KeyLoader = Callable[[], list[PublicKey]]


async def keys_read_by(reads: LoopReads) -> list[PublicKey]:
    """The ticket keys read on the event loop's connection (an `async` route)."""
    return [public_key_of(PURPOSE, *row) for row in await reads.all(KEY_ROWS)]


def keys_read_in(bind: Bind) -> KeyLoader:
    """The ticket keys read in the caller's transaction (a page's, a service's)."""
    return lambda: public_keys(bind, PURPOSE)


@dataclass
class TicketKeys:
    """The ticket keys one app verifies with, in memory: read at most every
    KEYS_FRESH_SECONDS through `load`, never once per code."""

    fresh_for: float = KEYS_FRESH_SECONDS
    _keys: list[PublicKey] = field(default_factory=list)
    _read_at: float | None = None

    def _due(self) -> bool:
        return self._read_at is None or time.monotonic() - self._read_at > self.fresh_for

    def _keep(self, keys: list[PublicKey]) -> list[PublicKey]:
        self._keys, self._read_at = keys, time.monotonic()
        return keys

    def current(self, load: KeyLoader) -> list[PublicKey]:
        return self._keep(load()) if self._due() else self._keys

    async def read_by(self, reads: LoopReads) -> list[PublicKey]:
        """`current`, read on the event loop's connections (db.LoopReads) when due."""
        return self._keep(await keys_read_by(reads)) if self._due() else self._keys

    def verify(self, typed: str, load: KeyLoader) -> str | None:
        """The registration's code when `typed` is a ticket this instance signed; None when it
        is not (and nothing of the registrations was read)."""
        if split(typed) is None:
            return None
        return _genuine_code(typed, self.current(load))

    async def verify_by(self, typed: str, reads: LoopReads) -> str | None:
        """`verify`, the keys read on the event loop's connections when due."""
        if split(typed) is None:
            return None
        return _genuine_code(typed, await self.read_by(reads))
