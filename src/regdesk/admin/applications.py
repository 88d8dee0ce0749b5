"""OAuth applications in the admin area (issue 8): register, change, rotate the secret, suspend;
and their OpenID Connect settings (oidc.md: post-logout redirect URIs, the ID token's algorithm).

The writes are `regdesk.oauth.applications`' own, the ones `regdesk apps` uses, and each
records its audit event; the form and its checks are admin/application_form.py. A new or
rotated client secret is shown once, in the answer to the form that made it (never in a
redirect, never stored, never logged), on a page no cache keeps.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import object_session

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.application_form import (
    ALGORITHM_CHOICES,
    OBO_CHOICES,
    SERVICE_CHOICES,
    ApplicationForm,
    changed_scopes,
    typed_form,
)
from regdesk.admin.pages import missing, path_number, staff_context
from regdesk.errors import Invalid
from regdesk.oauth.applications import (
    DEFAULT_ID_TOKEN_ALG,
    ApplicationNotFound,
    create_application,
    get_application,
    list_applications,
    rotate_secret,
    set_suspended,
    update_application,
)
from regdesk.oauth.models import Application
from regdesk.oauth.scopes import format_scopes
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb
from regdesk.webhooks.endpoints import list_endpoints
from regdesk.webhooks.event_names import EVENT_NAMES

router = APIRouter(prefix="/applications")

# What the page says after a change (Post/Redirect/Get: `?done=<key>`).
NOTICES = {
    "saved": "The changes were saved.",
    "rescoped": "The changes were saved. Its scopes changed: everyone who authorized it must "
    "authorize it again, and scopes it lost stopped working at once, for good, for the tokens "
    "it holds.",
    "suspended": "The application is suspended: its tokens and authorizations ended for good, "
    "and it cannot get new tokens.",
    "unsuspended": "The suspension is lifted: the application can get new tokens; people "
    "authorize it again.",
    "endpoint_removed": "The webhook endpoint was removed.",
}

TextField = Annotated[str, Form()]
ScopesField = Annotated[list[str], Form()]


def _context(staffer: Staffer, **context: Any) -> dict[str, Any]:
    return staff_context(
        staffer,
        obo_choices=OBO_CHOICES,
        service_choices=SERVICE_CHOICES,
        algorithm_choices=ALGORITHM_CHOICES,
        **context,
    )


def _application(request: Request, staffer: Staffer, db: PageDb, client_id: str) -> Application:
    """The application of the page's path, or the 404 page."""
    try:
        return get_application(db, path_number(client_id))
    except ApplicationNotFound:
        raise missing(request, staffer, "applications", "application", client_id) from None


def _secret_page(
    request: Request, staffer: Staffer, application: Application, secret: str, *, new: bool
) -> HTMLResponse:
    """The one time the secret is shown: the answer to the POST itself, kept by no cache."""
    return render(
        request,
        "admin/application_secret.html",
        _context(staffer, application=application, secret=secret, new=new),
        status_code=201 if new else 200,
        headers={"Pragma": "no-cache"},
    )


# --- the list ------------------------------------------------------------------------------


@router.get("")
def applications_page(request: Request, staffer: AdminDep, db: PageDb) -> HTMLResponse:
    return render(
        request,
        "admin/applications.html",
        _context(staffer, applications=list_applications(db)),
    )


# --- registering ---------------------------------------------------------------------------


@router.get("/new")
def new_application_page(request: Request, staffer: AdminDep) -> HTMLResponse:
    return render(request, "admin/application_new.html", _context(staffer, form=ApplicationForm()))


@router.post("/new")
def register_application(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    name: TextField = "",
    description: TextField = "",
    redirect_uris: TextField = "",
    obo_scopes: ScopesField = [],  # noqa: B006 (FastAPI copies defaults)
    service_scopes: ScopesField = [],  # noqa: B006
    post_logout_redirect_uris: TextField = "",
    id_token_alg: TextField = DEFAULT_ID_TOKEN_ALG,
) -> Response:
    form = typed_form(
        name,
        description,
        redirect_uris,
        obo_scopes,
        service_scopes,
        post_logout_redirect_uris,
        id_token_alg,
    )
    if form.check():
        try:
            application, secret = create_application(
                db,
                staffer.actor,
                name=form.name,
                description=form.description,
                redirect_uris=form.uris(),
                obo_scopes=format_scopes(form.obo_scopes),
                service_scopes=format_scopes(form.service_scopes),
                post_logout_redirect_uris=form.logout_uris(),
                id_token_alg=form.id_token_alg,
            )
        except Invalid as refused:
            form.errors.update(refused.errors)
        else:
            return _secret_page(request, staffer, application, secret, new=True)
    return render(
        request, "admin/application_new.html", _context(staffer, form=form), status_code=400
    )


# --- one application -----------------------------------------------------------------------


@router.get("/{client_id}")
def application_page(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    client_id: str,
    done: Annotated[str | None, Query()] = None,
) -> HTMLResponse:
    application = _application(request, staffer, db, client_id)
    return _application_page(
        request, staffer, application, ApplicationForm.of(application), NOTICES.get(done or "")
    )


def _application_page(
    request: Request,
    staffer: Staffer,
    application: Application,
    form: ApplicationForm,
    notice: str | None = None,
    status_code: int = 200,
    webhook_form: dict[str, Any] | None = None,
) -> HTMLResponse:
    session = object_session(application)
    assert session is not None
    return render(
        request,
        "admin/application.html",
        _context(
            staffer,
            application=application,
            form=form,
            notice=notice,
            endpoints=list_endpoints(session, application.id),  # its webhooks (admin/webhooks.py)
            webhook_form=webhook_form or {"url": "", "events": [], "errors": {}},
            event_names=EVENT_NAMES,
        ),
        status_code=status_code,
    )


@router.post("/{client_id}")
def change_application(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    client_id: str,
    name: TextField = "",
    description: TextField = "",
    redirect_uris: TextField = "",
    obo_scopes: ScopesField = [],  # noqa: B006
    service_scopes: ScopesField = [],  # noqa: B006
    post_logout_redirect_uris: TextField = "",
    id_token_alg: TextField = "",
) -> Response:
    """Name, description, redirect URIs, scopes and OpenID settings, as the form has them now
    (no algorithm chosen: the one it has)."""
    application = _application(request, staffer, db, client_id)
    form = typed_form(
        name,
        description,
        redirect_uris,
        obo_scopes,
        service_scopes,
        post_logout_redirect_uris,
        id_token_alg or application.id_token_alg,
    )
    if form.check():
        version = application.scopes_version
        try:
            update_application(
                db,
                staffer.actor,
                application.id,
                name=form.name,
                description=form.description,
                redirect_uris=form.uris(),
                obo_scopes=changed_scopes(form.obo_scopes, application.obo_scopes),
                service_scopes=changed_scopes(form.service_scopes, application.service_scopes),
                post_logout_redirect_uris=form.logout_uris(),
                id_token_alg=form.id_token_alg,
            )
        except Invalid as refused:
            form.errors.update(refused.errors)
        else:
            done = "rescoped" if application.scopes_version != version else "saved"
            return _back_to(application, done)
    return _application_page(request, staffer, application, form, status_code=400)


def _back_to(application: Application, done: str) -> RedirectResponse:
    return RedirectResponse(f"/admin/applications/{application.id}?done={done}", status_code=303)


@router.post("/{client_id}/rotate-secret")
def rotate_application_secret(
    request: Request, staffer: AdminDep, db: PageDb, client_id: str
) -> Response:
    """A new secret, shown this once; the old one stops working at once."""
    application = _application(request, staffer, db, client_id)
    application, secret = rotate_secret(db, staffer.actor, application.id)
    return _secret_page(request, staffer, application, secret, new=False)


@router.post("/{client_id}/suspend")
def suspend_application(
    request: Request, staffer: AdminDep, db: PageDb, client_id: str
) -> Response:
    """Its tokens stop working at once, and the token endpoint refuses it (invalid_client)."""
    application = _application(request, staffer, db, client_id)
    set_suspended(db, staffer.actor, application.id, True)
    return _back_to(application, "suspended")


@router.post("/{client_id}/unsuspend")
def unsuspend_application(
    request: Request, staffer: AdminDep, db: PageDb, client_id: str
) -> Response:
    application = _application(request, staffer, db, client_id)
    set_suspended(db, staffer.actor, application.id, False)
    return _back_to(application, "unsuspended")
