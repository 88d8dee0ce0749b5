"""The ID token (oidc.md, ID token), made by Authlib's OpenID Connect grant extensions on our
user's grants (oauth/user_grants.py): the code exchange's (`OpenIDCodeFlow`, Authlib's
OpenIDCode) and, as Authlib has none for it, the refresh's (`OpenIDRefresh`, on the same
OpenIDToken base). Each is made per token request (oauth/server.py's `GrantExtensions`), so it
reads the request's database session and issuer from its server.

Claims: `iss`, `sub`, `aud` and `azp` (the client_id), `iat`, `exp`, `auth_time` and `sid` (the
sign-in behind the code, kept on the grant for refreshes), `nonce` (the code's only), `at_hash`
and the claims of the token's scopes (oidc/claims.py). Header: `alg` (the application's
`id_token_alg`), `kid`, `typ`.

Also here: reading an ID token back, as /oauth/end-session's `id_token_hint`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from authlib.oidc.core.grants import OpenIDCode, OpenIDToken
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, RSAKey
from sqlalchemy.orm import Session

from regdesk.oauth.clients import OAuthClient
from regdesk.oauth.scopes import parse_scopes
from regdesk.oauth.user_grants import GrantUser, PresentedRefreshToken, RedeemedCode
from regdesk.oidc.claims import user_claims
from regdesk.oidc.keys import ALGORITHMS, IdTokenKeys, jose_key, published_keys

if TYPE_CHECKING:
    from authlib.oauth2.rfc6749 import OAuth2Request

    from regdesk.oauth.server import RegdeskAuthorizationServer

LIFETIME = 3600  # seconds: `exp` - `iat`


def sign_in_claims(auth_time: dt.datetime | None, sid: str | None) -> dict[str, Any]:
    claims: dict[str, Any] = {}
    if auth_time is not None:
        claims["auth_time"] = int(auth_time.timestamp())
    if sid is not None:
        claims["sid"] = sid
    return claims


class _IdToken(OpenIDToken):  # type: ignore[misc]
    """What both extensions share: the key, the header, the claims every ID token carries."""

    DEFAULT_EXPIRES_IN = LIFETIME

    def __init__(self, server: RegdeskAuthorizationServer, keys: IdTokenKeys) -> None:
        self.server = server
        self.keys = keys

    def get_client_algorithm(self, client: OAuthClient) -> str:
        return client.application.id_token_alg

    def get_encode_header(self, client: OAuthClient) -> dict[str, str]:
        key = self.keys.key(self.server.session, self.get_client_algorithm(client))
        return {"alg": key.algorithm, "kid": key.kid, "typ": "JWT"}

    def resolve_client_private_key(self, client: OAuthClient) -> RSAKey | ECKey:
        return jose_key(self.keys.key(self.server.session, self.get_client_algorithm(client)))

    def get_client_claims(self, client: OAuthClient) -> dict[str, Any]:
        client_id = client.get_client_id()
        return {"iss": self.server.issuer, "aud": client_id, "azp": client_id}

    def generate_user_info(self, user: GrantUser, scope: str) -> dict[str, Any]:
        return user_claims(self.server.session, user.id, parse_scopes(scope))


class OpenIDCodeFlow(_IdToken, OpenIDCode):  # type: ignore[misc]
    """The code exchange of an `openid` grant answers with an `id_token` too (Authlib's)."""

    def __init__(self, server: RegdeskAuthorizationServer, keys: IdTokenKeys) -> None:
        _IdToken.__init__(self, server, keys)
        OpenIDCode.__init__(self, require_nonce=False)  # oidc.md: required for nothing

    def get_authorization_code_claims(self, code: RedeemedCode) -> dict[str, Any]:
        claims = sign_in_claims(code.row.auth_time, code.row.sid)
        if code.row.nonce is not None:
            claims["nonce"] = code.row.nonce
        return claims

    def exists_nonce(self, nonce: str, request: OAuth2Request) -> bool:
        raise NotImplementedError("nonces are checked with the authorization request")


class OpenIDRefresh(_IdToken):
    """A refresh of a grant holding `openid` answers with a new `id_token` (OpenID Connect
    Core 12.2): the same sign-in (`auth_time`, `sid`), no `nonce`."""

    def get_compatible_claims(self, request: OAuth2Request) -> dict[str, Any]:
        claims: dict[str, Any] = super().get_compatible_claims(request)
        credential: PresentedRefreshToken = request.refresh_token
        claims.update(sign_in_claims(credential.grant.auth_time, credential.grant.sid))
        return claims


# --- reading an ID token back -----------------------------------------------------------------


@dataclass(frozen=True)
class IdTokenHint:
    client_id: str
    subject: str
    sid: str | None


def read_id_token_hint(
    session: Session, token: str, *, issuer: str, overlap: dt.timedelta, now: dt.datetime
) -> IdTokenHint | None:
    """An ID token this instance signed (with a key still published), for its issuer; expired
    or not (RP-Initiated Logout 1.0, 2). None for anything else."""
    try:
        header = jws.extract_compact(token.encode()).protected
    except (JoseError, ValueError):
        return None
    keys = {key.kid: key for key in published_keys(session, overlap, now)}
    key = keys.get(str(header.get("kid")))
    if key is None or header.get("alg") != key.algorithm or key.algorithm not in ALGORITHMS:
        return None
    public = ECKey.import_key(key.key) if key.algorithm == "ES256" else RSAKey.import_key(key.key)  # type: ignore[arg-type]
    try:
        claims = jwt.decode(token, public, algorithms=[key.algorithm]).claims
    except (JoseError, ValueError):
        return None
    audience, subject = claims.get("aud"), claims.get("sub")
    if claims.get("iss") != issuer or not isinstance(audience, str) or not isinstance(subject, str):
        return None
    sid = claims.get("sid")
    return IdTokenHint(audience, subject, sid if isinstance(sid, str) else None)
