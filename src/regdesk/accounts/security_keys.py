"""Security keys (WebAuthn) added and used (accounts.md, Second factor), with the maintained
`webauthn` package; listing, renaming and removing them is factors.py's.

The relying party is this instance: its id is the host of the public address
(settings.issuer), and the browser's origin must be that address. Each ceremony's challenge is
kept server-side in the links' store (links.py: by its hash, five minutes, single use, only the
person's newest), and is spent when an answer names it, good or bad: no answer is accepted twice.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from sqlalchemy import select, update
from sqlalchemy.orm import Session
from webauthn import (
    base64url_to_bytes,
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import (
    bytes_to_base64url,
    parse_authentication_credential_json,
    parse_client_data_json,
    parse_registration_credential_json,
)
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from regdesk.accounts.factor_models import SecurityKey
from regdesk.accounts.factors import (
    KEY_NAME_MAX,
    first_recovery_codes,
    record_change,
    security_keys_of,
)
from regdesk.accounts.links import LinkPurpose, issue_link, use_link
from regdesk.audit.service import Actor
from regdesk.db import utcnow
from regdesk.users.models import User

RP_NAME = "regdesk"
MAX_ANSWER = 16_000  # characters of a browser's JSON answer; real ones are far shorter
# A malformed answer fails in the parser with one of these, a forged one with WebAuthnException.
_REFUSED = (WebAuthnException, ValueError, TypeError, KeyError)


def rp_id(issuer: str) -> str:
    return urlsplit(issuer).hostname or ""


def origin(issuer: str) -> str:
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}"


def _descriptors(keys: list[SecurityKey]) -> list[PublicKeyCredentialDescriptor]:
    return [PublicKeyCredentialDescriptor(id=base64url_to_bytes(k.credential_id)) for k in keys]


def _take_challenge(
    session: Session, client_data_json: bytes, purpose: LinkPurpose, user_id: int
) -> bytes | None:
    """The challenge the browser signed, spent now, if it is one this person was given."""
    challenge = parse_client_data_json(client_data_json).challenge
    link = use_link(session, bytes_to_base64url(challenge), purpose)
    return challenge if link is not None and link.user_id == user_id else None


# --- adding a key ----------------------------------------------------------------------------


def registration_options(session: Session, user: User, issuer: str) -> str:
    """The options for navigator.credentials.create, as JSON; a new challenge is kept."""
    challenge = issue_link(session, user.id, LinkPurpose.SECURITY_KEY_ADD)
    options = generate_registration_options(
        rp_id=rp_id(issuer),
        rp_name=RP_NAME,
        user_id=user.id.to_bytes(8, "big"),  # stable, and names no one outside this instance
        user_name=user.username,
        user_display_name=user.preferred_name or user.first_name or user.username,
        challenge=base64url_to_bytes(challenge),
        exclude_credentials=_descriptors(security_keys_of(session, user.id)),
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.DISCOURAGED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
    )
    return options_to_json(options)


def add_security_key(
    session: Session,
    actor: Actor,
    user: User,
    answer: str,
    name: str,
    *,
    issuer: str,
    site: str,
) -> list[str] | None:
    """The key the browser made counts from now on if its answer holds: returns the new
    recovery codes when the person had none (shown once), else []; None when refused."""
    name = name.strip()[:KEY_NAME_MAX]
    if not name or len(answer) > MAX_ANSWER:
        return None
    try:
        credential = parse_registration_credential_json(answer)
        challenge = _take_challenge(
            session, credential.response.client_data_json, LinkPurpose.SECURITY_KEY_ADD, user.id
        )
        if challenge is None:
            return None
        verified = verify_registration_response(
            credential=credential,
            expected_challenge=challenge,
            expected_rp_id=rp_id(issuer),
            expected_origin=origin(issuer),
        )
    except _REFUSED:
        return None
    credential_id = bytes_to_base64url(verified.credential_id)
    taken = session.scalar(select(SecurityKey.id).where(SecurityKey.credential_id == credential_id))
    if taken is not None:
        return None
    session.add(
        SecurityKey(
            user_id=user.id,
            credential_id=credential_id,
            public_key=verified.credential_public_key,
            sign_count=verified.sign_count,
            name=name,
            created_at=utcnow(),
        )
    )
    session.flush()
    details = {"factor": "security_key", "name": name}
    record_change(session, actor, user, "user.factor_added", details, site)
    return first_recovery_codes(session, actor, user, site)


# --- signing in with a key -------------------------------------------------------------------


def authentication_options(session: Session, user: User, issuer: str) -> str | None:
    """The options for navigator.credentials.get, allowing the person's keys, as JSON; a new
    challenge is kept. None when they have no key."""
    keys = security_keys_of(session, user.id)
    if not keys:
        return None
    challenge = issue_link(session, user.id, LinkPurpose.SECURITY_KEY_LOGIN)
    options = generate_authentication_options(
        rp_id=rp_id(issuer),
        challenge=base64url_to_bytes(challenge),
        allow_credentials=_descriptors(keys),
        user_verification=UserVerificationRequirement.PREFERRED,
    )
    return options_to_json(options)


def check_security_key(session: Session, user: User, answer: str, *, issuer: str) -> bool:
    """Whether `answer` is one of the user's keys signing the challenge they were given (it is
    spent now), with a signature counter above the one it last reported (a cloned key's lags)."""
    if len(answer) > MAX_ANSWER:
        return False
    try:
        credential = parse_authentication_credential_json(answer)
        challenge = _take_challenge(
            session, credential.response.client_data_json, LinkPurpose.SECURITY_KEY_LOGIN, user.id
        )
        key = session.scalars(
            select(SecurityKey).where(
                SecurityKey.user_id == user.id,
                SecurityKey.credential_id == bytes_to_base64url(credential.raw_id),
            )
        ).first()
        if challenge is None or key is None:
            return False
        verified = verify_authentication_response(
            credential=credential,
            expected_challenge=challenge,
            expected_rp_id=rp_id(issuer),
            expected_origin=origin(issuer),
            credential_public_key=key.public_key,
            credential_current_sign_count=key.sign_count,
        )
    except _REFUSED:
        return False
    # One conditional UPDATE: of two answers racing with the same count, one wins. A key that
    # counts nothing reports 0 every time (WebAuthn 6.1.1).
    new_count = verified.new_sign_count
    counted = (SecurityKey.sign_count < new_count) if new_count else (SecurityKey.sign_count == 0)
    taken = session.execute(
        update(SecurityKey)
        .where(SecurityKey.id == key.id, counted)
        .values(sign_count=new_count, last_used_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return bool(taken.rowcount)  # type: ignore[attr-defined]
