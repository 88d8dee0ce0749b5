"""Who is at the keyboard: the signed-in visitor of a page, as a FastAPI dependency.

The pages use their own transaction dependency, scoped to the route function: it commits
before the response leaves, so the browser's next request (following a redirect after login,
say) always finds what this one wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request, Response

from regdesk.audit.service import Actor
from regdesk.deps import WriteSession
from regdesk.users.models import User
from regdesk.web import csrf
from regdesk.web.sessions import COOKIE_NAME, find_session

PageDb = WriteSession  # a page's one transaction, committed before the response is sent


@dataclass(frozen=True)
class Visitor:
    """A signed-in visitor: their session, who they are, and the token their forms carry."""

    session_id: str
    user: User
    csrf_token: str
    ip_address: str | None

    @property
    def actor(self) -> Actor:
        return Actor(label=f"user:{self.user.id}", user_id=self.user.id, ip_address=self.ip_address)


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
    )


VisitorDep = Annotated[Visitor | None, Depends(_visitor, scope="function")]


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
