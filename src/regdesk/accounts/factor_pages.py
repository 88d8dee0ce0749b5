"""A person's second factors on /account (accounts.md, Second factor): an authenticator app
set up from a QR code made on the server and confirmed with a code before it counts, removed
given the password; the ten recovery codes, shown once when made; security keys renamed or
removed. The service is factors.py."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from regdesk.accounts.account_page import (
    NO_STORE,
    TextField,
    account_form_visitor,
    account_view,
    password_refused,
    recovery_codes_page,
)
from regdesk.accounts.factors import (
    begin_totp,
    confirm_totp,
    has_second_factor,
    new_recovery_codes,
    remove_security_key,
    remove_totp,
    rename_security_key,
    totp_setup,
)
from regdesk.accounts.security_keys import add_security_key, registration_options
from regdesk.deps import IssuerDep
from regdesk.web.headers import SCRIPT_POLICY
from regdesk.web.pages import render
from regdesk.web.qr import qr_svg
from regdesk.web.visitor import PageDb, Visitor, VisitorDep, signed_in

router = APIRouter(include_in_schema=False)


# --- an authenticator app --------------------------------------------------------------------


@router.post("/account/totp")
def start_totp(
    request: Request, db: PageDb, visitor: VisitorDep, csrf_token: TextField = ""
) -> Response:
    """A new secret to set up (replacing one not confirmed), shown on the next page."""
    signed = account_form_visitor(request, visitor, csrf_token)
    begin_totp(db, signed.user, request.app.state.secret_key)
    return RedirectResponse("/account/totp", status_code=303)


@router.get("/account/totp")
def totp_page(request: Request, db: PageDb, visitor: VisitorDep) -> Response:
    signed = signed_in(request, visitor)
    return _totp_form(request, db, signed)


@router.post("/account/totp/confirm")
def confirm(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    site: IssuerDep,
    csrf_token: TextField = "",
    code: TextField = "",
) -> Response:
    """The app counts once it shows the right code; a first factor brings recovery codes."""
    signed = account_form_visitor(request, visitor, csrf_token)
    secret_key = request.app.state.secret_key
    codes = confirm_totp(db, signed.actor, signed.user, code[:20], secret_key=secret_key, site=site)
    if codes is None:
        error = "That is not the code your app shows. Type the six digits it shows now."
        return _totp_form(request, db, signed, error=error, status_code=400)
    if codes:
        return recovery_codes_page(request, signed, codes, first=True)
    return RedirectResponse("/account?factor=added", status_code=303)


@router.post("/account/totp/remove")
def remove_app(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    site: IssuerDep,
    csrf_token: TextField = "",
    current_password: TextField = "",
) -> Response:
    """Given the password (a stolen session must not take a factor away on its own)."""
    signed = account_form_visitor(request, visitor, csrf_token)
    refused_page = _password_refused(request, db, signed, current_password, "totp_password")
    if refused_page is not None:
        return refused_page
    remove_totp(db, signed.actor, signed.user, site=site)
    return RedirectResponse("/account?factor=removed", status_code=303)


def _totp_form(
    request: Request,
    db: PageDb,
    visitor: Visitor,
    *,
    error: str | None = None,
    status_code: int = 200,
) -> Response:
    setup = totp_setup(db, visitor.user, request.app.state.secret_key)
    if setup is None:  # nothing being set up: start from the account page
        return RedirectResponse("/account", status_code=303)
    return render(
        request,
        "totp_setup.html",
        {"visitor": visitor, "setup": setup, "qr": qr_svg(setup.uri, "totp-qr"), "error": error},
        status_code=status_code,
        headers=NO_STORE,
    )


# --- recovery codes --------------------------------------------------------------------------


@router.post("/account/recovery-codes")
def recovery_codes(
    request: Request, db: PageDb, visitor: VisitorDep, site: IssuerDep, csrf_token: TextField = ""
) -> Response:
    """Ten new codes, shown on this answer only; the earlier ones stop working."""
    signed = account_form_visitor(request, visitor, csrf_token)
    if not has_second_factor(db, signed.user.id):
        return RedirectResponse("/account", status_code=303)
    codes = new_recovery_codes(db, signed.actor, signed.user, site=site)
    return recovery_codes_page(request, signed, codes, first=False)


# --- security keys ---------------------------------------------------------------------------


KEY_REFUSED = (
    "Your security key's answer did not work. Try again, with a key not added already, "
    "or add an authenticator app instead."
)
NO_SCRIPT = (
    "Adding a security key needs JavaScript, which did not run. Turn it on for this site, "
    "or add an authenticator app instead."
)


@router.get("/account/security-keys/new")
def new_key_page(request: Request, db: PageDb, visitor: VisitorDep, site: IssuerDep) -> Response:
    signed = signed_in(request, visitor)
    return _new_key_form(request, db, signed, site)


@router.post("/account/security-keys")
def add_key(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    site: IssuerDep,
    csrf_token: TextField = "",
    name: TextField = "",
    credential: TextField = "",
) -> Response:
    """The browser's answer to navigator.credentials.create (webauthn.js), checked and kept
    under `name`; a first factor brings recovery codes."""
    signed = account_form_visitor(request, visitor, csrf_token)
    if not name.strip():
        errors = {"name": "Give the key a name, to tell it from your others."}
        return _new_key_form(request, db, signed, site, errors=errors, status_code=400)
    if not credential:
        return _new_key_form(request, db, signed, site, error=NO_SCRIPT, status_code=400)
    codes = add_security_key(
        db, signed.actor, signed.user, credential, name, issuer=site, site=site
    )
    if codes is None:
        return _new_key_form(request, db, signed, site, error=KEY_REFUSED, status_code=400)
    if codes:
        return recovery_codes_page(request, signed, codes, first=True)
    return RedirectResponse("/account?factor=added", status_code=303)


def _new_key_form(
    request: Request,
    db: PageDb,
    visitor: Visitor,
    site: str,
    *,
    error: str | None = None,
    errors: dict[str, str] | None = None,
    status_code: int = 200,
) -> Response:
    """The page that adds a key, with a new challenge (the one it replaces stops working)."""
    return render(
        request,
        "security_key_add.html",
        {
            "visitor": visitor,
            "options": registration_options(db, visitor.user, site),
            "error": error,
            "errors": errors or {},
        },
        status_code=status_code,
        headers={**NO_STORE, "Content-Security-Policy": SCRIPT_POLICY},
    )


@router.post("/account/security-keys/rename")
def rename_key(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    csrf_token: TextField = "",
    key_id: TextField = "",
    name: TextField = "",
) -> Response:
    signed = account_form_visitor(request, visitor, csrf_token)
    if not rename_security_key(db, signed.user.id, key_id, name):
        errors = {f"key-{key_id[:10]}-name": "Give the key a name."}
        return account_view(request, db, signed, factor_errors=errors, status_code=400)
    return RedirectResponse("/account?factor=renamed", status_code=303)


@router.post("/account/security-keys/remove")
def remove_key(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    site: IssuerDep,
    csrf_token: TextField = "",
    key_id: TextField = "",
    current_password: TextField = "",
) -> Response:
    """Given the password, as the app's removal."""
    signed = account_form_visitor(request, visitor, csrf_token)
    field = f"key-{key_id[:10]}-password"
    refused_page = _password_refused(request, db, signed, current_password, field)
    if refused_page is not None:
        return refused_page
    remove_security_key(db, signed.actor, signed.user, key_id, site=site)
    return RedirectResponse("/account?factor=removed", status_code=303)


def _password_refused(
    request: Request, db: PageDb, visitor: Visitor, password: str, field: str
) -> Response | None:
    """The account page again, its `field` saying why, unless `password` is the visitor's."""

    def show(errors: dict[str, str], status: int, headers: Mapping[str, str] | None) -> Response:
        return account_view(
            request, db, visitor, factor_errors=errors, status_code=status, headers=headers
        )

    return password_refused(
        request,
        db,
        visitor,
        password,
        field=field,
        failed_action="user.factor_change_failed",
        show=show,
    )
