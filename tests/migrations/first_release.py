"""What the first release's database held: a convention's records in the first schema's own
tables and columns (revision 0001), for tests/migrations/test_upgrade_from_first_release.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

from regdesk.security import hash_client_secret, hash_password, token_hash

CLIENT_SECRET = "tool-secret-kept-since-the-first-release"
SERVICE_TOKEN = "service-token-issued-by-the-first-release"
USER_TOKEN = "user-token-issued-by-the-first-release"
REFRESH_TOKEN = "refresh-token-issued-by-the-first-release"
PASSWORD = "plum-orchard-lantern-42"
WRITTEN = dt.datetime(2026, 7, 4, 18, 30)  # naive UTC, as the first release kept time


def first_release_rows() -> dict[str, list[dict[str, Any]]]:
    """A convention's records in the first schema's own tables and columns, in the order
    their foreign keys need."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    at = {"created_at": WRITTEN}
    stamped = {"created_at": WRITTEN, "updated_at": WRITTEN}
    person = {
        "verified": True,
        "identity_verified": False,
        "newsletter": False,
        "profile_picture_url": None,
        **stamped,
    }
    no_address = dict.fromkeys(
        ("address_line1", "address_line2", "address_city", "address_state", "address_zipcode"),
        None,
    )
    options = [
        {"id": 1, "name": "Shirt size", "type": "select", "choices": ["S", "M", "L"]},
        {"id": 2, "name": "Days", "type": "multi", "choices": ["Fri", "Sat", "Sun"]},
        {"id": 3, "name": "Notes", "type": "text", "choices": None},
        {"id": 4, "name": "Hours", "type": "number", "choices": None},
    ]
    return {
        "instance_settings": [{"key": "secret_key", "value": "first-release-secret", **at}],
        "roles": [
            {"id": 1, "name": "Staff", "staff": True, **at},
            {"id": 2, "name": "Attendee", "staff": False, **at},
        ],
        "users": [
            {
                "id": 1,
                "username": "fox",
                "email": "fox@example.org",
                "first_name": "Fae",
                "last_name": "Fox",
                "preferred_name": "Foxy",
                "phone": "+15555550123",
                "address_line1": "1 Main St",
                "address_line2": "Apt 2",
                "address_city": "Reno",
                "address_state": "NV",
                "address_zipcode": "89501",
                "address_country": "US",
                "born_at": dt.date(1990, 1, 1),
                "password_hash": hash_password(PASSWORD),
                **person,
                "newsletter": True,
            },
            {
                "id": 2,
                "username": "owl",
                "email": "owl@example.org",
                "first_name": "Oda",
                "last_name": "Owl",
                "preferred_name": None,
                "phone": None,
                **no_address,
                "address_country": None,
                "born_at": None,
                "password_hash": None,
                **person,
            },
            {
                "id": 3,
                "username": "cat",
                "email": "cat@example.org",
                "first_name": "Cy",
                "last_name": "Cat",
                "preferred_name": None,
                "phone": "+15555550199",
                **no_address,
                "address_country": "CA",
                "born_at": None,
                "password_hash": None,
                **person,
            },
        ],
        "user_roles": [
            {"user_id": 1, "role_id": 1, "scope": "convention", **at},
            {"user_id": 3, "role_id": 2, "scope": "global", **at},
        ],
        "user_permissions": [{"user_id": 1, "name": "volunteer:read"}],
        "departments": [
            {"id": 1, "name": "Security", "email": "security@example.org", "publicly_visible": True}
            | stamped,
            {"id": 2, "name": "Ops", "email": "ops@example.org", "publicly_visible": False}
            | stamped,
        ],
        "department_leads": [
            {"department_id": 1, "user_id": 3},
            {"department_id": 2, "user_id": 1},
        ],
        "events": [
            {
                "id": 1,
                "name": "FoxCon 2026",
                "starts_on": dt.date(2026, 7, 3),
                "ends_on": dt.date(2026, 7, 5),
                "is_current": True,
                **at,
            }
        ],
        "event_options": [
            {**option, "event_id": 1, "position": number} for number, option in enumerate(options)
        ],
        "volunteers": [
            {"id": 1, "event_id": 1, "user_id": 1, **stamped},
            {"id": 2, "event_id": 1, "user_id": 2, **stamped},
        ],
        "volunteer_contact_methods": [
            {"id": 1, "volunteer_id": 1, "position": 0, "name": "Discord", "value": "fox#1"}
            | {"is_primary": True},
            {"id": 2, "volunteer_id": 1, "position": 1, "name": "Telegram", "value": "@fae"}
            | {"is_primary": False},
        ],
        "volunteer_department_states": [
            {"volunteer_id": 1, "department_id": 1, "state": "interest"},
            {"volunteer_id": 1, "department_id": 1, "state": "experience"},
            {"volunteer_id": 1, "department_id": 2, "state": "avoid"},
            {"volunteer_id": 2, "department_id": 2, "state": "assignment"},
        ],
        "volunteer_option_values": [
            {"volunteer_id": 1, "option_id": 1, "value": "L"},
            {"volunteer_id": 1, "option_id": 2, "value": ["Fri", "Sat"]},
            {"volunteer_id": 1, "option_id": 3, "value": "Nights, please"},
            {"volunteer_id": 1, "option_id": 4, "value": 12},
        ],
        "oauth_applications": [
            {
                "id": 1,
                "name": "Tool",
                "description": "The volunteer scheduler",
                "secret_hash": hash_client_secret(CLIENT_SECRET),
                "redirect_uris": ["https://tool.example.org/callback"],
                "obo_scopes": "pii:basic pii:email",
                "service_scopes": "user:read volunteer:read",
                "scopes_version": 1,
                "suspended": False,
                "secret_rotated_at": None,
                **stamped,
            }
        ],
        "oauth_grants": [
            {
                "id": 1,
                "application_id": 1,
                "user_id": 1,
                "scope": "pii:basic pii:email",
                "app_scopes_version": 1,
                "created_at": now - dt.timedelta(minutes=5),
                "revoked_at": None,
                "revoked_reason": None,
            }
        ],
        "oauth_access_tokens": [
            {
                "id": 1,
                "token_hash": token_hash(SERVICE_TOKEN),
                "application_id": 1,
                "user_id": None,
                "grant_id": None,
                "scope": "user:read volunteer:read",
                "created_at": now - dt.timedelta(minutes=1),
                "expires_at": now + dt.timedelta(hours=1),
                "revoked_at": None,
            },
            {
                "id": 2,
                "token_hash": token_hash(USER_TOKEN),
                "application_id": 1,
                "user_id": 1,
                "grant_id": 1,
                "scope": "pii:basic pii:email",
                "created_at": now - dt.timedelta(minutes=1),
                "expires_at": now + dt.timedelta(hours=1),
                "revoked_at": None,
            },
        ],
        "oauth_authorization_codes": [
            {
                "id": 1,
                "code_hash": token_hash("a-code-used-long-ago"),
                "application_id": 1,
                "user_id": 1,
                "redirect_uri": "https://tool.example.org/callback",
                "scope": "pii:basic pii:email",
                "code_challenge": None,
                "code_challenge_method": None,
                "grant_id": 1,
                "created_at": now - dt.timedelta(minutes=5),
                "expires_at": now - dt.timedelta(minutes=4),
                "used_at": now - dt.timedelta(minutes=5),
            }
        ],
        "oauth_refresh_tokens": [
            {
                "id": 1,
                "token_hash": token_hash(REFRESH_TOKEN),
                "grant_id": 1,
                "scope": "pii:basic pii:email",
                "access_token_id": 2,
                "created_at": now - dt.timedelta(minutes=1),
                "last_used_at": None,
                "consumed_at": None,
                "revoked_at": None,
            }
        ],
        "audit_events": [
            {
                "id": 1,
                "occurred_at": WRITTEN,
                "action": "user.created",
                "actor": "cli:organizer",
                "actor_user_id": None,
                "target_type": "user",
                "target_id": "1",
                "ip_address": None,
                "details": {"roles": ["Staff"], "permissions": ["volunteer:read"]},
            },
            {
                "id": 2,
                "occurred_at": WRITTEN + dt.timedelta(minutes=1),
                "action": "application.created",
                "actor": "user:1",
                "actor_user_id": 1,
                "target_type": "application",
                "target_id": "1",
                "ip_address": "192.0.2.7",
                "details": {"name": "Tool"},
            },
        ],
    }
