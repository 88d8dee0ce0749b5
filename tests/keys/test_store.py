"""The key store (regdesk.keys): one key in use per purpose, made once, its private half never
in the database in the clear; retired keys still verify; every algorithm the next features
need (EdDSA now, RS256 and ES256 next) signs what its public JWK verifies."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from sqlalchemy import Engine

from regdesk.db import write_session
from regdesk.keys import (
    GENERATORS,
    PublicKey,
    install,
    public_keys,
    retire,
    signing_key,
    thumbprint,
)
from regdesk.keys.store import _INSTALLED
from tests.helpers import database_text


def _int(member: str) -> int:
    return int.from_bytes(base64.urlsafe_b64decode(member + "=" * (-len(member) % 4)), "big")


def _verify_with_jwk(jwk: dict[str, str], signature: bytes, message: bytes) -> None:
    """As a client holding only the JWKS would."""
    if jwk["kty"] == "OKP":
        raw = base64.urlsafe_b64decode(jwk["x"] + "=" * (-len(jwk["x"]) % 4))
        ed25519.Ed25519PublicKey.from_public_bytes(raw).verify(signature, message)
    elif jwk["kty"] == "EC":
        key = ec.EllipticCurvePublicNumbers(_int(jwk["x"]), _int(jwk["y"]), ec.SECP256R1())
        der = encode_dss_signature(
            int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
        )
        key.public_key().verify(der, message, ec.ECDSA(hashes.SHA256()))
    else:
        numbers = rsa.RSAPublicNumbers(_int(jwk["e"]), _int(jwk["n"]))
        numbers.public_key().verify(signature, message, padding.PKCS1v15(), hashes.SHA256())


def test_a_purposes_key_is_made_once_and_kept_encrypted(engine: Engine) -> None:
    with write_session(engine) as session:
        first = signing_key(session, "ticket", "EdDSA")
    with write_session(engine) as session:
        again = signing_key(session, "ticket", "EdDSA")
        (public,) = public_keys(session, "ticket")
    assert first.kid == again.kid == public.kid == thumbprint(public.key)
    assert first.sign(b"x") == again.sign(b"x")  # the same key (Ed25519: deterministic)
    stored = database_text(engine)
    assert "PRIVATE KEY" not in stored
    assert "PUBLIC KEY" in stored
    assert repr(first) == f"PrivateKey(kid={first.kid!r}, algorithm='EdDSA')"  # never the key


@pytest.mark.parametrize("algorithm", sorted(GENERATORS))
def test_a_retired_key_still_verifies_and_a_new_one_signs(engine: Engine, algorithm: str) -> None:
    """Retired three times over: four keys, each new, each still verifying what it signed."""
    with write_session(engine) as session:
        made = [signing_key(session, "test", algorithm)]
        for _ in range(3):
            assert retire(session, "test") == made[-1].kid
            made.append(signing_key(session, "test", algorithm))
        keys = public_keys(session, "test")
    assert len({key.kid for key in made}) == 4
    assert [(k.kid, k.retired) for k in keys] == [(key.kid, key is not made[-1]) for key in made]
    for key, public in zip(made, keys, strict=True):
        _verify_with_jwk(public.jwk(), key.sign(b"ticket"), b"ticket")


def test_a_key_made_under_another_secret_is_retired_and_replaced_not_a_failure(
    engine: Engine,
) -> None:
    """The operator rotated the instance secret: the key it encrypted cannot be read any more,
    so it is retired (what it signed still verifies) and a new one made under the new secret."""
    with write_session(engine) as session:
        old = signing_key(session, "ticket", "EdDSA")
    install(engine, "another instance's secret key, long enough to look real")
    try:
        with write_session(engine) as session:
            new = signing_key(session, "ticket", "EdDSA")
            keys = public_keys(session, "ticket")
        with write_session(engine) as session:
            assert signing_key(session, "ticket", "EdDSA").kid == new.kid  # readable: kept
    finally:
        _INSTALLED.pop(engine.pool, None)  # back to the secret the database keeps
    assert new.kid != old.kid
    assert [(k.kid, k.retired) for k in keys] == [(old.kid, True), (new.kid, False)]
    _verify_with_jwk(keys[0].jwk(), old.sign(b"ticket"), b"ticket")


@pytest.mark.parametrize("algorithm", sorted(GENERATORS))
def test_each_algorithm_signs_what_its_published_jwk_verifies(
    engine: Engine, algorithm: str
) -> None:
    with write_session(engine) as session:
        key = signing_key(session, f"test-{algorithm}", algorithm)
        (public,) = public_keys(session, f"test-{algorithm}")
    jwk = public.jwk()
    assert (jwk["kid"], jwk["alg"], jwk["use"]) == (key.kid, algorithm, "sig")
    _verify_with_jwk(jwk, key.sign(b"message"), b"message")


def test_the_kid_is_the_rfc_7638_thumbprint() -> None:
    """RFC 8037, A.3: the thumbprint of its Ed25519 example key."""
    x = base64.urlsafe_b64decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=")
    key = ed25519.Ed25519PublicKey.from_public_bytes(x)
    assert thumbprint(key) == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    assert PublicKey("k", "test", "EdDSA", key, False).jwk()["x"] == (
        "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    )
