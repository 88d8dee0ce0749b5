"""Rendering the web pages: one Jinja2 environment, one way to answer with a page.

Every page is rendered with autoescaping on and is never stored by a cache (`no-store`): each
one holds either a form with its CSRF token or someone's personal data. The security headers
themselves are added by `regdesk.web.headers`, for every HTML response of the application.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from regdesk.oauth.scopes import SCOPES, Scope

HERE = Path(__file__).parent
STATIC_PATH = "/static"
STATIC_DIRECTORY = HERE / "static"

_environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,  # a misspelt name fails the page (and its test), loudly
    trim_blocks=True,
    lstrip_blocks=True,
)
_templates = Jinja2Templates(env=_environment)


def render(
    request: Request,
    template: str,
    context: Mapping[str, Any],
    *,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """The page `template`, filled in. `context` needs `visitor` (None when not signed in)."""
    response = _templates.TemplateResponse(
        request,
        template,
        {"static": STATIC_PATH, **context},
        status_code=status_code,
        headers={"Cache-Control": "no-store", **(headers or {})},
    )
    return response


def scopes_in_words(names: list[str] | tuple[str, ...]) -> list[Scope]:
    """The registry's entries for these scope names, in order (unknown names left out)."""
    return [SCOPES[name] for name in names if name in SCOPES]


def static_files() -> StaticFiles:
    """The stylesheet, served from the package (no third party: the CSP allows only 'self')."""
    return StaticFiles(directory=STATIC_DIRECTORY)
