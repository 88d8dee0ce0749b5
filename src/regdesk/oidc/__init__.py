"""Sign in with regdesk: the OpenID Provider on the OAuth server (oidc.md).

- oidc/id_tokens.py: the ID token, added to the user's grants' token responses by Authlib's
  OpenID Connect grant extensions (`grant_extensions`, handed to the server at start);
- oidc/claims.py: what each scope tells about the user; oidc/keys.py: the signing keys;
- oidc/routes.py: discovery, JWKS, userinfo, RP-initiated logout.
The authorization request's OpenID parameters (nonce, prompt, max_age, login_hint) are read
with the others in oauth/authorization.py and acted on by the consent page (web/consent.py).
"""

from __future__ import annotations

from functools import partial

from regdesk.oauth.server import GrantExtensions
from regdesk.oidc.id_tokens import OpenIDCodeFlow, OpenIDRefresh
from regdesk.oidc.keys import IdTokenKeys, ensure_keys
from regdesk.oidc.routes import pages, router

__all__ = ["ensure_keys", "grant_extensions", "pages", "router"]


def grant_extensions() -> GrantExtensions:
    """The ID token on the code exchange and on refresh, signed with this process's keys."""
    keys = IdTokenKeys()
    return GrantExtensions(
        authorization_code=(partial(OpenIDCodeFlow, keys=keys),),
        refresh_token=(partial(OpenIDRefresh, keys=keys),),
    )
