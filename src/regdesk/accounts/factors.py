"""Second factors (accounts.md, Second factor): an authenticator app (TOTP, RFC 6238), security
keys (WebAuthn) and ten single-use recovery codes.
Every change is an audit event and a mail to the person.

The TOTP secret must stay usable to check codes, so it is kept encrypted (Fernet) under a key
derived from the instance's secret key: a copy of the database alone reads no secret. A code
is accepted once: the step it belongs to is recorded, and a code of that step or an earlier
one is refused afterwards (one conditional UPDATE, so two racing requests cannot both pass).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

import pyotp
from cryptography.fernet import Fernet, InvalidToken
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from regdesk.accounts.factor_models import RecoveryCode, SecurityKey, TotpFactor
from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow
from regdesk.mail.service import queue_mail
from regdesk.security import derived_fernet
from regdesk.users.models import User
from regdesk.web.mail_templates import render_mail

RECOVERY_CODES = 10
# Read from paper and typed back: lower case, and none of 0 and o, 1, i and l to mistake.
_CODE_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"
TOTP_ISSUER = "regdesk"
KEY_NAME_MAX = 64


# --- the TOTP secret, encrypted --------------------------------------------------------------


def _fernet(secret_key: str) -> Fernet:
    """A key of its own for TOTP secrets, derived from the instance's secret key."""
    return derived_fernet(secret_key, "regdesk totp secret")


def _secret_of(factor: TotpFactor, secret_key: str) -> str | None:
    try:
        return _fernet(secret_key).decrypt(factor.secret_encrypted.encode()).decode()
    except InvalidToken:  # the instance's secret key changed: the factor cannot be checked
        return None


# --- an authenticator app --------------------------------------------------------------------


def totp_factor(session: Session, user_id: int) -> TotpFactor | None:
    return session.scalars(select(TotpFactor).where(TotpFactor.user_id == user_id)).first()


def begin_totp(session: Session, user: User, secret_key: str) -> None:
    """A new secret to set up, replacing one not yet confirmed; nothing when one is in use."""
    factor = totp_factor(session, user.id)
    if factor is not None and factor.confirmed_at is not None:
        return
    encrypted = _fernet(secret_key).encrypt(pyotp.random_base32().encode()).decode()
    if factor is None:
        session.add(TotpFactor(user_id=user.id, secret_encrypted=encrypted, created_at=utcnow()))
    else:
        factor.secret_encrypted = encrypted
        factor.created_at = utcnow()
    session.flush()


@dataclass(frozen=True)
class TotpSetup:
    secret: str  # in groups of four, for typing
    uri: str  # otpauth://, for the QR code


def totp_setup(session: Session, user: User, secret_key: str) -> TotpSetup | None:
    """The secret being set up, not yet confirmed; None when there is none."""
    factor = totp_factor(session, user.id)
    if factor is None or factor.confirmed_at is not None:
        return None
    secret = _secret_of(factor, secret_key)
    if secret is None:
        return None
    uri = pyotp.TOTP(secret).provisioning_uri(name=user.username, issuer_name=TOTP_ISSUER)
    return TotpSetup(" ".join(secret[i : i + 4] for i in range(0, len(secret), 4)), uri)


def confirm_totp(
    session: Session, actor: Actor, user: User, code: str, *, secret_key: str, site: str
) -> list[str] | None:
    """The app being set up counts from now on if `code` is right: returns the new recovery
    codes when the person had none (shown once), else []; None for a wrong code."""
    factor = totp_factor(session, user.id)
    if factor is None or factor.confirmed_at is not None:
        return None
    if not _take_totp_code(session, factor, code, secret_key):
        return None
    factor.confirmed_at = utcnow()
    record_change(session, actor, user, "user.factor_added", {"factor": "totp"}, site)
    return first_recovery_codes(session, actor, user, site)


def remove_totp(session: Session, actor: Actor, user: User, *, site: str) -> bool:
    factor = totp_factor(session, user.id)
    if factor is None:
        return False
    confirmed = factor.confirmed_at is not None
    session.delete(factor)
    session.flush()
    if confirmed:
        record_change(session, actor, user, "user.factor_removed", {"factor": "totp"}, site)
        _drop_codes_without_factor(session, user.id)
    return confirmed


def check_totp(session: Session, user_id: int, code: str, secret_key: str) -> bool:
    """Whether `code` is the user's confirmed app's, and not used before (it is used now)."""
    factor = totp_factor(session, user_id)
    if factor is None or factor.confirmed_at is None:
        return False
    return _take_totp_code(session, factor, code, secret_key)


def _take_totp_code(session: Session, factor: TotpFactor, code: str, secret_key: str) -> bool:
    """The code of the current 30-second step or of either neighbour (clocks drift), once."""
    code = "".join(code.split())
    secret = _secret_of(factor, secret_key)
    if secret is None or not (len(code) == 6 and code.isascii() and code.isdigit()):
        return False
    totp = pyotp.TOTP(secret)
    now = utcnow()
    current = totp.timecode(now)
    for step in (current - 1, current, current + 1):
        expected = totp.generate_otp(step)
        if hmac.compare_digest(expected, code):
            taken = session.execute(
                update(TotpFactor)
                .where(
                    TotpFactor.id == factor.id,
                    (TotpFactor.last_used_step.is_(None)) | (TotpFactor.last_used_step < step),
                )
                .values(last_used_step=step)
                .execution_options(synchronize_session=False)
            )
            session.refresh(factor)
            return bool(taken.rowcount)  # type: ignore[attr-defined]
    return False


# --- recovery codes --------------------------------------------------------------------------


def new_recovery_codes(session: Session, actor: Actor, user: User, *, site: str) -> list[str]:
    """Ten new codes (shown once); the earlier ones stop working."""
    codes = _replace_codes(session, user.id)
    record_change(session, actor, user, "user.recovery_codes_generated", {}, site)
    return codes


def recovery_codes_left(session: Session, user_id: int) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(RecoveryCode)
            .where(RecoveryCode.user_id == user_id, RecoveryCode.used_at.is_(None))
        )
        or 0
    )


def use_recovery_code(session: Session, actor: Actor, user: User, code: str, *, site: str) -> bool:
    """Whether `code` is one of the user's unused recovery codes (it is used up now)."""
    typed = "".join(c for c in code.casefold() if c.isalnum())
    if len(typed) != 12:
        return False
    spent = session.execute(
        update(RecoveryCode)
        .where(
            RecoveryCode.user_id == user.id,
            RecoveryCode.code_hash == _code_hash(typed),
            RecoveryCode.used_at.is_(None),
        )
        .values(used_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if not spent.rowcount:  # type: ignore[attr-defined]
        return False
    left = recovery_codes_left(session, user.id)
    record_change(session, actor, user, "user.recovery_code_used", {"codes_left": left}, site)
    return True


def first_recovery_codes(session: Session, actor: Actor, user: User, site: str) -> list[str]:
    """New codes for a person's first factor; [] when they hold some already."""
    held = session.scalar(
        select(func.count()).select_from(RecoveryCode).where(RecoveryCode.user_id == user.id)
    )
    return [] if held else new_recovery_codes(session, actor, user, site=site)


def _replace_codes(session: Session, user_id: int) -> list[str]:
    session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user_id))
    codes = [
        "".join(secrets.choice(_CODE_ALPHABET) for _ in range(12)) for _ in range(RECOVERY_CODES)
    ]
    now = utcnow()
    session.add_all(
        RecoveryCode(user_id=user_id, code_hash=_code_hash(code), created_at=now) for code in codes
    )
    session.flush()
    return [f"{code[:4]}-{code[4:8]}-{code[8:]}" for code in codes]


def _code_hash(code: str) -> str:
    return hashlib.sha256(f"regdesk recovery code|{code}".encode()).hexdigest()


def _drop_codes_without_factor(session: Session, user_id: int) -> None:
    """Recovery codes stand in for a factor: with the last factor gone, they go too."""
    if not has_second_factor(session, user_id):
        session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user_id))


# --- security keys --------------------------------------------------------------


def security_keys_of(session: Session, user_id: int) -> list[SecurityKey]:
    return list(
        session.scalars(
            select(SecurityKey).where(SecurityKey.user_id == user_id).order_by(SecurityKey.id)
        )
    )


def _own_key(session: Session, user_id: int, key_id: str) -> SecurityKey | None:
    if not (key_id.isascii() and key_id.isdigit() and len(key_id) < 10):
        return None
    key = session.get(SecurityKey, int(key_id))
    return key if key is not None and key.user_id == user_id else None


def rename_security_key(session: Session, user_id: int, key_id: str, name: str) -> bool:
    key = _own_key(session, user_id, key_id)
    if key is None or not name.strip():
        return False
    key.name = name.strip()[:KEY_NAME_MAX]
    return True


def remove_security_key(
    session: Session, actor: Actor, user: User, key_id: str, *, site: str
) -> bool:
    key = _own_key(session, user.id, key_id)
    if key is None:
        return False
    details = {"factor": "security_key", "name": key.name}
    session.delete(key)
    session.flush()
    record_change(session, actor, user, "user.factor_removed", details, site)
    _drop_codes_without_factor(session, user.id)
    return True


# --- every factor ----------------------------------------------------------------------------


def has_second_factor(session: Session, user_id: int) -> bool:
    """Whether signing in asks for a second factor: a confirmed app or a security key."""
    app = select(TotpFactor.id).where(
        TotpFactor.user_id == user_id, TotpFactor.confirmed_at.is_not(None)
    )
    key = select(SecurityKey.id).where(SecurityKey.user_id == user_id)
    return session.scalar(select(app.exists() | key.exists())) or False


def reset_second_factors(session: Session, actor: Actor, user: User, *, site: str) -> int:
    """Every factor and recovery code of the user goes (an organizer helping someone who lost
    them all): returns how many factors there were."""
    removed = 0
    for model in (TotpFactor, SecurityKey):
        removed += session.execute(delete(model).where(model.user_id == user.id)).rowcount  # type: ignore[attr-defined]
    session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user.id))
    record_change(session, actor, user, "user.factors_reset", {"factors_removed": removed}, site)
    return removed


_WORDS = {
    "user.factor_added": "A second factor was added to your account",
    "user.factor_removed": "A second factor was removed from your account",
    "user.recovery_codes_generated": "New recovery codes were made for your account",
    "user.recovery_code_used": "A recovery code of your account was used",
    "user.factors_reset": "Every second factor of your account was removed",
}


def record_change(
    session: Session, actor: Actor, user: User, action: str, details: dict[str, Any], site: str
) -> None:
    """The audit event of a change to the user's second factors, and the mail that tells them."""
    record_event(
        session, actor, action, target_type="user", target_id=user.id, details=details or None
    )
    what = _WORDS[action]
    text, html = render_mail(
        "second_factor_changed",
        {
            "name": user.preferred_name or user.first_name,
            "username": user.username,
            "what": what,
            "when": utcnow().strftime("%Y-%m-%d at %H:%M UTC"),
            "account": f"{site}/account",
            "site": site,
        },
    )
    queue_mail(session, to=user.email, subject=what, text=text, html=html)
