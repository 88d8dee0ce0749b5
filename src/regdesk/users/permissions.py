"""Permission names a user may hold (decisions.md, Scopes).

`admin` holds every permission; each other one is the name of a sensitive scope, which a
user may grant an application only while holding the permission of the same name.
"""

from __future__ import annotations

from regdesk.oauth.scopes import SCOPES

ADMIN = "admin"
PERMISSIONS: frozenset[str] = frozenset({ADMIN, *(s.name for s in SCOPES.values() if s.sensitive)})


def check_permission(name: str) -> str:
    if name not in PERMISSIONS:
        raise ValueError(f"unknown permission {name!r}; known: {', '.join(sorted(PERMISSIONS))}")
    return name
