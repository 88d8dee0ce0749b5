"""REGDESK_STAFF_2FA=required (accounts.md, Second factor): staff (a user holding `admin` or a
permission that allows a sensitive scope) must add a second factor before the admin area or a
consent to a sensitive scope works for them. The API is not affected.

Second factors are the accounts package's, a layer above this one: the app hands its check
over at start (`app.state.has_second_factor`), so that these pages can ask it.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import RedirectResponse

from regdesk.oauth.authorization import holds_sensitive_permission
from regdesk.web.visitor import Visitor

# Where staff are sent to add one: the account page's second-factor section, saying why.
SET_UP_PATH = "/account?factor=required#factors-heading"


def second_factor_missing(request: Request, visitor: Visitor) -> bool:
    """Whether the visitor is staff without a second factor while one is required."""
    if request.app.state.settings.staff_2fa != "required":
        return False
    if not holds_sensitive_permission(visitor.db, visitor.user.id):
        return False
    return not request.app.state.has_second_factor(visitor.db, visitor.user.id)


def to_second_factor_set_up() -> RedirectResponse:
    return RedirectResponse(SET_UP_PATH, status_code=303)
