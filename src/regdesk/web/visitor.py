"""Who is at the keyboard: the signed-in visitor of a page, as a FastAPI dependency.

The pages use their own transaction dependency, scoped to the route function: it commits
before the response leaves, so the browser's next request (following a redirect after login,
say) always finds what this one wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Depends, Request, Response
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.departments.service import led_department_ids
from regdesk.deps import WriteSession
from regdesk.oauth.permissions import ADMIN, DESK, permissions_of
from regdesk.users.models import User
from regdesk.web import csrf
from regdesk.web.pages import render
from regdesk.web.sessions import COOKIE_NAME, LiveSession, end_session, find_session

PageDb = WriteSession  # a page's one transaction, committed before the response is sent


@dataclass(frozen=True)
class Visitor:
    """A signed-in visitor: their session, who they are, and the token their forms carry.

    Their staff rights (`permissions`, `led_departments`) are read from the page's session
    the first time something asks (the header's Admin link, an admin page's guard), then kept
    for the rest of the request.
    """

    session_id: str
    user: User
    csrf_token: str
    ip_address: str | None
    db: Session = field(repr=False, compare=False)
    session: LiveSession | None = field(default=None, repr=False, compare=False)

    @property
    def actor(self) -> Actor:
        return Actor(label=f"user:{self.user.id}", user_id=self.user.id, ip_address=self.ip_address)

    @cached_property
    def permissions(self) -> frozenset[str]:
        return frozenset(permissions_of(self.db, self.user.id))

    @property
    def is_admin(self) -> bool:
        return ADMIN in self.permissions

    @property
    def works_desk(self) -> bool:
        """May use the registration desk: holds `registration:desk`, or `admin`."""
        return self.is_admin or DESK in self.permissions

    @cached_property
    def led_departments(self) -> frozenset[int]:
        return led_department_ids(self.db, self.user.id)

    @property
    def is_organizer(self) -> bool:
        """May use the admin area: holds `admin`, or leads a department."""
        return self.is_admin or bool(self.led_departments)


def client_address(request: Request) -> str | None:
    return request.client.host if request.client else None


def _visitor(request: Request, db: PageDb) -> Visitor | None:
    live = find_session(db, request.cookies.get(COOKIE_NAME))
    if live is None:
        return None
    user = db.get(User, live.user_id)
    if user is None:
        return None
    return Visitor(
        live.session_id,
        user,
        csrf.session_token(request, live.session_id),
        client_address(request),
        db,
        live,
    )


VisitorDep = Annotated[Visitor | None, Depends(_visitor, scope="function")]


class PageRefused(Exception):
    """A page or form action that answers with `response` instead (see `app.py`'s handler)."""

    def __init__(self, response: Response) -> None:
        super().__init__("page refused")
        self.response = response

    @classmethod
    def forbidden(cls, request: Request, visitor: Visitor | None) -> PageRefused:
        """403: a form without its CSRF token, or with someone else's; nothing was done."""
        return cls(render(request, "forbidden.html", {"visitor": visitor}, status_code=403))

    @classmethod
    def not_permitted(cls, request: Request, visitor: Visitor) -> PageRefused:
        """403: signed in, but without the right to this page or action."""
        return cls(render(request, "not_permitted.html", {"visitor": visitor}, status_code=403))


def login_redirect(next_: str, login_hint: str | None = None) -> RedirectResponse:
    """To the login page, coming back to `next_` (a local path) afterwards; `login_hint`
    (OpenID Connect) fills in its username."""
    query = {"next": next_, **({"login_hint": login_hint} if login_hint else {})}
    return RedirectResponse(f"/login?{urlencode(query)}", status_code=303)


def signed_in(request: Request, visitor: Visitor | None) -> Visitor:
    """The visitor, or a refusal that sends them to log in and come back to this page."""
    if visitor is None:
        back = request.url.path
        if request.method == "GET" and request.url.query:
            back += f"?{request.url.query}"
        raise PageRefused(login_redirect(back))
    return visitor


async def refused_page(request: Request, refusal: Exception) -> Response:
    assert isinstance(refusal, PageRefused)
    return refusal.response


def set_session_cookie(response: Response, request: Request, session_id: str) -> None:
    """HttpOnly (no script reads it), SameSite=Lax (sent when an application's link brings the
    visitor here, never with another site's POST), Secure whenever we are reached over HTTPS.
    No Max-Age: it ends with the browser; the server ends it sooner (regdesk.web.sessions)."""
    response.set_cookie(
        COOKIE_NAME,
        session_id,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def clear_session_cookie(response: Response, request: Request) -> None:
    response.delete_cookie(
        COOKIE_NAME, path="/", httponly=True, samesite="lax", secure=request.url.scheme == "https"
    )


def set_login_cookie(response: Response, request: Request, nonce: str) -> None:
    """The login form's CSRF cookie (regdesk.web.csrf); flags as the session's."""
    response.set_cookie(
        csrf.LOGIN_COOKIE,
        nonce,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def forbidden(request: Request, visitor: Visitor | None) -> Response:
    """A form arrived without its CSRF token, or with someone else's: nothing was done."""
    return PageRefused.forbidden(request, visitor).response


def end_visit(db: Session, visitor: Visitor) -> None:
    """The visitor's session ends, server-side: the cookie, if kept, signs no one in."""
    end_session(db, visitor.session_id)
    record_event(db, visitor.actor, "user.logout", target_type="user", target_id=visitor.user.id)
