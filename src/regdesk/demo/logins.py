"""The demo's three logins and its applications: printed once, for the organizer to try."""

from __future__ import annotations

from dataclasses import dataclass

# --- the demo logins and applications ------------------------------------------------------


@dataclass(frozen=True)
class Login:
    user_id: int
    username: str
    first_name: str
    last_name: str
    preferred_name: str | None
    purpose: str


ADMIN = Login(1, "admin", "Adaeze", "Okonkwo", "Ada", "administrator: holds the `admin` permission")
LEAD = Login(
    2,
    "lead",
    "Søren",
    "Lindqvist",
    None,
    "lead of Volunteer Ops and Info Desk; holds volunteer:read and user:read",
)
ATTENDEE = Login(3, "attendee", "Mei", "Nakamura", None, "attendee with a volunteer application")
LOGINS = {login.user_id: login for login in (ADMIN, LEAD, ATTENDEE)}
LEAD_DEPARTMENTS = ("Volunteer Ops", "Info Desk")
LOGIN_EMAIL_DOMAIN = "example.org"


def login_email(login: Login) -> str:
    return f"{login.username}@{LOGIN_EMAIL_DOMAIN}"


@dataclass(frozen=True)
class AppSpec:
    name: str
    description: str
    kind: str
    obo_scopes: str = ""
    service_scopes: str = ""
    redirect_uris: tuple[str, ...] = ()


DEMO_APPLICATIONS = (
    AppSpec(
        "Volunteer Time Clock",
        "Clocks volunteers in and out of their shifts.",
        "service integration",
        service_scopes="user:read volunteer:read registration:read",
    ),
    AppSpec(
        "Discord Bot",
        "Gives verified attendees their roles on the convention's Discord server.",
        "OBO",
        obo_scopes="pii:basic pii:email",
        redirect_uris=("http://127.0.0.1:5000/callback",),
    ),
)
