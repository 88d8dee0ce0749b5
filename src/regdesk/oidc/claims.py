"""The claims about a user that OpenID Connect hands out (oidc.md, Scopes): `sub` always, and
each scope's claims when the token holds that scope or its pii:* twin (the same consent).

Claims without a value (no phone number, no preferred name) are left out, as OpenID Connect
Core 5.3.2 asks, rather than sent as null.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from regdesk.oauth.scopes import SCOPES
from regdesk.roles.models import Role, UserRole
from regdesk.users.models import User


def subject(user_id: int) -> str:
    """`sub`: the user's id as a string, the `sub` of /api/users/current (decisions.md)."""
    return str(user_id)


def _profile(session: Session, user: User) -> dict[str, Any]:
    return {
        "name": f"{user.first_name} {user.last_name}".strip(),
        "given_name": user.first_name,
        "family_name": user.last_name,
        "preferred_username": user.username,
        "nickname": user.preferred_name,
        "picture": user.profile_picture_url,
        "updated_at": int(user.updated_at.timestamp()),
    }


def _email(session: Session, user: User) -> dict[str, Any]:
    return {"email": user.email, "email_verified": user.verified}


def _phone(session: Session, user: User) -> dict[str, Any]:
    # Phone numbers are checked for their form (E.164), never proven to be the user's.
    if not user.phone:
        return {}
    return {"phone_number": user.phone, "phone_number_verified": False}


def _address(session: Session, user: User) -> dict[str, Any]:
    """OpenID Connect Core 5.1.1's address object, from the user's address fields."""
    street = "\n".join(line for line in (user.address_line1, user.address_line2) if line)
    parts = {
        "street_address": street or None,
        "locality": user.address_city,
        "region": user.address_state,
        "postal_code": user.address_zipcode,
        "country": user.address_country,
    }
    address = {key: value for key, value in parts.items() if value}
    if not address:
        return {}
    town = " ".join(p for p in (user.address_zipcode, user.address_city) if p)
    formatted = [street, town, user.address_state or "", user.address_country or ""]
    address["formatted"] = "\n".join(line for line in formatted if line)
    return {"address": address}


def _groups(session: Session, user: User) -> dict[str, Any]:
    names = session.scalars(
        select(Role.name)
        .join(UserRole, UserRole.role_id == Role.id)
        .where(UserRole.user_id == user.id)
        .order_by(Role.name)
    )
    return {"groups": list(names)}


# Each OpenID scope with the claims it gives (its twin, if any, gives the same).
SCOPE_CLAIMS: dict[str, Callable[[Session, User], dict[str, Any]]] = {
    "profile": _profile,
    "email": _email,
    "phone": _phone,
    "address": _address,
    "groups": _groups,
}
CLAIMS_SUPPORTED = (
    "sub",
    "iss",
    "aud",
    "exp",
    "iat",
    "auth_time",
    "nonce",
    "at_hash",
    "azp",
    "sid",
    "name",
    "given_name",
    "family_name",
    "preferred_username",
    "nickname",
    "picture",
    "updated_at",
    "email",
    "email_verified",
    "phone_number",
    "phone_number_verified",
    "address",
    "groups",
)


def user_claims(session: Session, user_id: int, scopes: Collection[str]) -> dict[str, Any]:
    """`sub`, and the claims of the scopes among `scopes` (or their twins)."""
    claims: dict[str, Any] = {"sub": subject(user_id)}
    user = session.get(User, user_id)
    if user is None:
        return claims
    for scope, claims_of in SCOPE_CLAIMS.items():
        if scope in scopes or SCOPES[scope].twin in scopes:
            claims.update(claims_of(session, user))
    return {key: value for key, value in claims.items() if value is not None}
