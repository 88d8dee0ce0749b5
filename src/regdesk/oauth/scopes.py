"""The scope registry: the one table every scope check asks (decisions.md, Scopes)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Flag, auto


class Holder(Flag):
    """Who may hold a scope: a user's grant (OBO), a service integration, or both."""

    OBO = auto()
    SERVICE = auto()
    BOTH = OBO | SERVICE


@dataclass(frozen=True)
class Scope:
    name: str
    holder: Holder
    sensitive: bool
    description: str  # plain words, shown on the consent screen
    # An OpenID Connect scope that is another name for a pii:* one (oidc.md): the same rules
    # and the same words on the consent screen, both taken from that one.
    twin: str | None = None


def twin(name: str, of: Scope) -> Scope:
    """The OpenID Connect scope `name`, equivalent to `of` (oidc.md, Scopes)."""
    return Scope(name, of.holder, of.sensitive, of.description, twin=of.name)


PII_BASIC = Scope("pii:basic", Holder.OBO, False, "See your name, username and basic profile")
PII_EMAIL = Scope("pii:email", Holder.OBO, False, "See your e-mail address")
PII_PHONE = Scope("pii:phone", Holder.OBO, False, "See your phone number")
PII_ADDRESS = Scope("pii:address", Holder.OBO, False, "See your postal address")


SCOPES: dict[str, Scope] = {
    scope.name: scope
    for scope in (
        PII_BASIC,
        PII_EMAIL,
        PII_PHONE,
        PII_ADDRESS,
        Scope("con:read", Holder.OBO, False, "See your own attendee registration"),
        Scope("pii:finance:read", Holder.OBO, False, "See your own order history"),
        Scope("user:read", Holder.BOTH, True, "Read every user's profile and roles"),
        Scope(
            "volunteer:read",
            Holder.BOTH,
            True,
            "Read every volunteer application and the departments",
        ),
        Scope("user:roles:update", Holder.BOTH, True, "Add and remove roles of any user"),
        Scope("registration:read", Holder.BOTH, True, "Read every attendee registration"),
        # registrations.md, Pages: ticket scanning apps, on behalf of desk staff.
        Scope("admin:ticket:read", Holder.OBO, True, "Look up attendees' tickets"),
        Scope("admin:ticket:scan", Holder.OBO, True, "Check attendees in with their tickets"),
        # oidc.md, Scopes: OpenID Connect, for every other tool a convention runs.
        Scope("openid", Holder.OBO, False, "Sign you in with your regdesk account"),
        twin("profile", PII_BASIC),
        twin("email", PII_EMAIL),
        twin("phone", PII_PHONE),
        twin("address", PII_ADDRESS),
        Scope("groups", Holder.OBO, False, "See the names of your roles"),
    )
}


class ScopeError(ValueError):
    """A scope string names scopes that do not exist or may not be held this way."""


def parse_scopes(value: str | Iterable[str] | None) -> list[str]:
    """Scope names from a space-separated string (or several), in order, without repeats."""
    if value is None:
        return []
    parts = value.split(" ") if isinstance(value, str) else [p for v in value for p in v.split(" ")]
    return list(dict.fromkeys(p for p in parts if p))


def format_scopes(names: Iterable[str]) -> str:
    return " ".join(dict.fromkeys(names))


def check_scopes(names: Iterable[str], holder: Holder) -> list[str]:
    """The names, validated: each must exist and be holdable by `holder`."""
    names = list(names)
    unknown = [n for n in names if n not in SCOPES]
    if unknown:
        raise ScopeError(f"unknown scope {unknown[0]!r}")
    wrong = [n for n in names if not SCOPES[n].holder & holder]
    if wrong:
        kind = "a service integration" if holder == Holder.SERVICE else "a user's grant"
        raise ScopeError(f"scope {wrong[0]!r} cannot be held by {kind}")
    return names


def check_service_scopes(requested: Iterable[str], approved: str) -> None:
    """A service integration may ask for `requested`: each exists, is a service scope, and is
    among the application's `approved` ones. ScopeError names the first that is not."""
    requested = check_scopes(requested, Holder.SERVICE)
    allowed = set(parse_scopes(approved))
    beyond = [name for name in requested if name not in allowed]
    if beyond:
        raise ScopeError(f"The scope {beyond[0]!r} is not approved for this application")
