"""The register and edit form of an application in the admin area (admin/applications.py):
what it holds as typed, and each field checked on its own with the service's rules
(`regdesk.oauth.applications`: the same checks `regdesk apps` is held to), so that every
error shows at once, beside its field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from regdesk.oauth.applications import (
    DEFAULT_ID_TOKEN_ALG,
    ID_TOKEN_ALGORITHMS,
    check_post_logout_redirect_uri,
    check_redirect_uri,
)
from regdesk.oauth.models import Application
from regdesk.oauth.scopes import SCOPES, Holder, ScopeError, check_scopes, format_scopes

MAX_NAME = 200  # the column's length
MAX_DESCRIPTION = 2000
MAX_REDIRECT_URIS = 20  # of each kind: redirect URIs, post-logout redirect URIs
MAX_REDIRECT_URI = 2000

OBO_CHOICES = [scope for scope in SCOPES.values() if scope.holder & Holder.OBO]
SERVICE_CHOICES = [scope for scope in SCOPES.values() if scope.holder & Holder.SERVICE]
# The ID token's algorithms as the form offers them: the service's, each in plain words.
_ALGORITHM_WORDS = {
    "RS256": "what every OpenID Connect tool understands",
    "ES256": "elliptic curve, shorter tokens; for tools that support it",
}
ALGORITHM_CHOICES = {algorithm: _ALGORITHM_WORDS[algorithm] for algorithm in ID_TOKEN_ALGORITHMS}


@dataclass
class ApplicationForm:
    """What the register and edit forms hold, as typed, and what is wrong with it."""

    name: str = ""
    description: str = ""
    redirect_uris: str = ""  # one per line, as the textarea holds them
    obo_scopes: list[str] = field(default_factory=list)
    service_scopes: list[str] = field(default_factory=list)
    post_logout_redirect_uris: str = ""  # one per line, too
    id_token_alg: str = DEFAULT_ID_TOKEN_ALG
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, application: Application) -> ApplicationForm:
        return cls(
            name=application.name,
            description=application.description,
            redirect_uris="\n".join(application.redirect_uris),
            obo_scopes=application.obo_scopes.split(),
            service_scopes=application.service_scopes.split(),
            post_logout_redirect_uris="\n".join(application.post_logout_redirect_uris),
            id_token_alg=application.id_token_alg,
        )

    def uris(self) -> list[str]:
        return _lines(self.redirect_uris)

    def logout_uris(self) -> list[str]:
        return _lines(self.post_logout_redirect_uris)

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
        self._check_uris("redirect_uris", "redirect URI", self.uris(), check_redirect_uri)
        self._check_uris(
            "post_logout_redirect_uris",
            "post-logout redirect URI",
            self.logout_uris(),
            check_post_logout_redirect_uri,  # what `regdesk apps` is held to (oidc.md)
        )
        if self.id_token_alg not in ID_TOKEN_ALGORITHMS:
            self.errors["id_token_alg"] = f"Choose {' or '.join(ID_TOKEN_ALGORITHMS)}."
        for holder, key in ((Holder.OBO, "obo_scopes"), (Holder.SERVICE, "service_scopes")):
            try:
                check_scopes(getattr(self, key), holder)
            except ScopeError as exc:
                self.errors[key] = f"{str(exc)[:1].upper()}{str(exc)[1:]}."
        return not self.errors

    def _check_uris(
        self, key: str, noun: str, uris: list[str], check: Callable[[str], str]
    ) -> None:
        """The first thing wrong with a list of URIs, under `key`: too many, too long, or
        refused by `check` (the service's own rule for them)."""
        if len(uris) > MAX_REDIRECT_URIS:
            self.errors[key] = f"At most {MAX_REDIRECT_URIS} {noun}s."
            return
        for uri in uris:
            if len(uri) > MAX_REDIRECT_URI:
                self.errors[key] = f"A {noun} may be at most {MAX_REDIRECT_URI} characters long."
                return
            try:
                check(uri)
            except ValueError as exc:
                self.errors[key] = f"{str(exc)[:1].upper()}{str(exc)[1:]}."
                return


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def typed_form(
    name: str,
    description: str,
    redirect_uris: str,
    obo: list[str],
    service: list[str],
    post_logout_redirect_uris: str,
    id_token_alg: str,
) -> ApplicationForm:
    return ApplicationForm(
        name=name,
        description=description.replace("\r\n", "\n").strip(),
        redirect_uris=redirect_uris.replace("\r\n", "\n"),
        obo_scopes=in_registry_order(obo),
        service_scopes=in_registry_order(service),
        post_logout_redirect_uris=post_logout_redirect_uris.replace("\r\n", "\n"),
        id_token_alg=id_token_alg,
    )


def in_registry_order(names: list[str]) -> list[str]:
    """The order the form lists them in, whatever order they came in (unknown ones last)."""
    order = {name: index for index, name in enumerate(SCOPES)}
    return sorted(dict.fromkeys(names), key=lambda name: order.get(name, len(order)))


def changed_scopes(chosen: list[str], held: str) -> str | None:
    """The new scopes, or None when they are the ones it holds (in whatever order)."""
    return None if set(chosen) == set(held.split()) else format_scopes(chosen)
