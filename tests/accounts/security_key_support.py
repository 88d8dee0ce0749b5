"""A security key in software, for the route tests: it answers the options a page carries
(data-options) as a browser and an authenticator would, with a P-256 key and attestation
"none", so that the server's WebAuthn checks run for real without a browser."""

from __future__ import annotations

import hashlib
import html
import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from webauthn.helpers import bytes_to_base64url, encode_cbor

ORIGIN = "https://testserver"
OPTIONS = re.compile(r'data-options="([^"]*)"')


def page_options(page: str) -> dict[str, Any]:
    found = OPTIONS.search(page)
    assert found, page
    options: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return options


def _client_data(kind: str, challenge: str, origin: str) -> bytes:
    return json.dumps(
        {"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": False}
    ).encode()


@dataclass
class SoftKey:
    private_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    credential_id: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    sign_count: int = 0
    counts: bool = True  # a key that counts nothing always reports 0

    @property
    def id(self) -> str:
        return bytes_to_base64url(self.credential_id)

    def _cose_public_key(self) -> bytes:
        numbers = self.private_key.public_key().public_numbers()
        return encode_cbor(
            {
                1: 2,
                3: -7,
                -1: 1,
                -2: numbers.x.to_bytes(32, "big"),
                -3: numbers.y.to_bytes(32, "big"),
            }
        )

    def _auth_data(self, rp_id: str, flags: int) -> bytes:
        if self.counts:
            self.sign_count += 1
        return (
            hashlib.sha256(rp_id.encode()).digest()
            + bytes([flags])
            + self.sign_count.to_bytes(4, "big")
        )

    def create(self, options: dict[str, Any], origin: str = ORIGIN) -> str:
        """The answer to navigator.credentials.create, as webauthn.js sends it."""
        client_data = _client_data("webauthn.create", options["challenge"], origin)
        attested = (
            bytes(16)  # AAGUID: none
            + len(self.credential_id).to_bytes(2, "big")
            + self.credential_id
            + self._cose_public_key()
        )
        auth_data = self._auth_data(options["rp"]["id"], 0x01 | 0x04 | 0x40) + attested
        attestation = encode_cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return json.dumps(
            {
                "id": self.id,
                "rawId": self.id,
                "type": "public-key",
                "response": {
                    "clientDataJSON": bytes_to_base64url(client_data),
                    "attestationObject": bytes_to_base64url(attestation),
                },
                "clientExtensionResults": {},
            }
        )

    def get(
        self, options: dict[str, Any], origin: str = ORIGIN, *, challenge: str | None = None
    ) -> str:
        """The answer to navigator.credentials.get, as webauthn.js sends it."""
        client_data = _client_data("webauthn.get", challenge or options["challenge"], origin)
        auth_data = self._auth_data(options["rpId"], 0x01 | 0x04)
        signature = self.private_key.sign(
            auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256())
        )
        return json.dumps(
            {
                "id": self.id,
                "rawId": self.id,
                "type": "public-key",
                "response": {
                    "clientDataJSON": bytes_to_base64url(client_data),
                    "authenticatorData": bytes_to_base64url(auth_data),
                    "signature": bytes_to_base64url(signature),
                },
                "clientExtensionResults": {},
            }
        )
