"""OAuth applications in the admin area (issue 8): register, change, rotate the secret, suspend.

The writes are `regdesk.oauth.applications`' own, the ones `regdesk apps` uses, and each
records its audit event. A new or rotated client secret is shown once, in the answer to the
form that made it (never in a redirect, never stored, never logged), on a page no cache keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import object_session

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import missing, path_number, staff_context
from regdesk.errors import Invalid
from regdesk.oauth.applications import (
    ApplicationNotFound,
    check_redirect_uri,
    create_application,
    get_application,
    list_applications,
    rotate_secret,
    set_suspended,
    update_application,
)
from regdesk.oauth.models import Application
from regdesk.oauth.scopes import SCOPES, Holder, ScopeError, check_scopes, format_scopes
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb
from regdesk.webhooks.endpoints import list_endpoints
from regdesk.webhooks.event_names import EVENT_NAMES

router = APIRouter(prefix="/applications")

MAX_NAME = 200  # the column's length
MAX_DESCRIPTION = 2000
MAX_REDIRECT_URIS = 20
MAX_REDIRECT_URI = 2000

OBO_CHOICES = [scope for scope in SCOPES.values() if scope.holder & Holder.OBO]
SERVICE_CHOICES = [scope for scope in SCOPES.values() if scope.holder & Holder.SERVICE]

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


@dataclass
class ApplicationForm:
    """What the register and edit forms hold, as typed, and what is wrong with it."""

    name: str = ""
    description: str = ""
    redirect_uris: str = ""  # one per line, as the textarea holds them
    obo_scopes: list[str] = field(default_factory=list)
    service_scopes: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, application: Application) -> ApplicationForm:
        return cls(
            name=application.name,
            description=application.description,
            redirect_uris="\n".join(application.redirect_uris),
            obo_scopes=application.obo_scopes.split(),
            service_scopes=application.service_scopes.split(),
        )

    def uris(self) -> list[str]:
        return [line.strip() for line in self.redirect_uris.splitlines() if line.strip()]

    def check(self) -> bool:
        """Each field on its own, with the same rules the service applies; True when valid."""
        name = self.name.strip()
        if not name:
            self.errors["name"] = "Enter the application's name."
        elif len(name) > MAX_NAME:
            self.errors["name"] = f"The name may be at most {MAX_NAME} characters long."
        if len(self.description) > MAX_DESCRIPTION:
            self.errors["description"] = (
                f"The description may be at most {MAX_DESCRIPTION} characters long."
            )
        self._check_uris()
        for holder, key in ((Holder.OBO, "obo_scopes"), (Holder.SERVICE, "service_scopes")):
            try:
                check_scopes(getattr(self, key), holder)
            except ScopeError as exc:
                self.errors[key] = f"{str(exc)[:1].upper()}{str(exc)[1:]}."
        return not self.errors

    def _check_uris(self) -> None:
        uris = self.uris()
        if len(uris) > MAX_REDIRECT_URIS:
            self.errors["redirect_uris"] = f"At most {MAX_REDIRECT_URIS} redirect URIs."
            return
        for uri in uris:
            if len(uri) > MAX_REDIRECT_URI:
                self.errors["redirect_uris"] = (
                    f"A redirect URI may be at most {MAX_REDIRECT_URI} characters long."
                )
                return
            try:
                check_redirect_uri(uri)
            except ValueError as exc:
                self.errors["redirect_uris"] = f"{str(exc)[:1].upper()}{str(exc)[1:]}."
                return


def _form(
    name: str, description: str, redirect_uris: str, obo: list[str], service: list[str]
) -> ApplicationForm:
    return ApplicationForm(
        name=name,
        description=description.replace("\r\n", "\n").strip(),
        redirect_uris=redirect_uris.replace("\r\n", "\n"),
        obo_scopes=_in_registry_order(obo),
        service_scopes=_in_registry_order(service),
    )


def _in_registry_order(names: list[str]) -> list[str]:
    """The order the form lists them in, whatever order they came in (unknown ones last)."""
    order = {name: index for index, name in enumerate(SCOPES)}
    return sorted(dict.fromkeys(names), key=lambda name: order.get(name, len(order)))


def _changed_scopes(chosen: list[str], held: str) -> str | None:
    """The new scopes, or None when they are the ones it holds (in whatever order)."""
    return None if set(chosen) == set(held.split()) else format_scopes(chosen)


def _context(staffer: Staffer, **context: Any) -> dict[str, Any]:
    return staff_context(
        staffer, obo_choices=OBO_CHOICES, service_choices=SERVICE_CHOICES, **context
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
) -> Response:
    form = _form(name, description, redirect_uris, obo_scopes, service_scopes)
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
) -> Response:
    """Name, description, redirect URIs and scopes, as the form has them now."""
    application = _application(request, staffer, db, client_id)
    form = _form(name, description, redirect_uris, obo_scopes, service_scopes)
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
                obo_scopes=_changed_scopes(form.obo_scopes, application.obo_scopes),
                service_scopes=_changed_scopes(form.service_scopes, application.service_scopes),
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
