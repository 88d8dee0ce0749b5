"""`regdesk apps create/update/show` with the OpenID settings (oidc.md, Logout)."""

from __future__ import annotations

import json

from tests.client import TestClient
from tests.conftest import Cli


def document(cli: Cli, *args: str) -> dict[str, object]:
    found: dict[str, object] = json.loads(cli.ok(*args, "--json").stdout)
    return found


def test_apps_take_post_logout_uris_and_an_id_token_algorithm(cli: Cli) -> None:
    made = document(
        cli,
        "apps",
        "create",
        "--name",
        "Wiki",
        "--obo-scopes",
        "openid profile",
        "--redirect-uri",
        "https://wiki.example/cb",
        "--post-logout-redirect-uri",
        "https://wiki.example/bye",
        "--post-logout-redirect-uri",
        "https://wiki.example/bye2",
        "--id-token-alg",
        "ES256",
    )
    client_id = str(made["client_id"])
    shown = document(cli, "apps", "show", client_id)
    assert shown["post_logout_redirect_uris"] == [
        "https://wiki.example/bye",
        "https://wiki.example/bye2",
    ]
    assert shown["id_token_alg"] == "ES256"

    document(cli, "apps", "update", client_id, "--id-token-alg", "RS256")
    shown = document(cli, "apps", "show", client_id)
    assert shown["id_token_alg"] == "RS256"
    assert shown["post_logout_redirect_uris"] == [
        "https://wiki.example/bye",
        "https://wiki.example/bye2",
    ]
    document(
        cli, "apps", "update", client_id, "--post-logout-redirect-uri", "https://wiki.example/x"
    )
    assert document(cli, "apps", "show", client_id)["post_logout_redirect_uris"] == [
        "https://wiki.example/x"
    ]
    document(cli, "apps", "update", client_id, "--clear-post-logout-redirect-uris")
    assert document(cli, "apps", "show", client_id)["post_logout_redirect_uris"] == []


def test_the_defaults_and_the_refusals(cli: Cli) -> None:
    made = document(cli, "apps", "create", "--name", "Forum")
    assert made["id_token_alg"] == "RS256"
    assert made["post_logout_redirect_uris"] == []
    bad_alg = cli("apps", "create", "--name", "X", "--id-token-alg", "HS256")
    assert bad_alg.exit_code != 0
    plain_http = cli(
        "apps", "create", "--name", "X", "--post-logout-redirect-uri", "http://wiki.example/bye"
    )
    assert plain_http.exit_code == 1
    assert "post-logout redirect URI" in plain_http.stderr


def test_keys_rotate_gives_id_tokens_new_keys_and_keeps_the_old_ones_published(
    cli: Cli, client: TestClient
) -> None:
    """oidc.md, Keys: one key store with the webhook keys, rotated by `regdesk keys rotate`;
    the old ID-token keys stay in the JWKS for the overlap (tests/oidc/test_relying_party.py
    follows a live session through a rotation)."""
    before = {key["kid"] for key in client.get("/oauth/jwks").json()["keys"]}
    rotated = document(cli, "keys", "rotate")
    purposes = {key["purpose"]: key for key in rotated["keys"]}  # type: ignore[attr-defined]
    assert set(purposes) == {"webhook", "id-token RS256", "id-token ES256"}
    retired = {purposes[p]["retired"] for p in ("id-token RS256", "id-token ES256")}
    assert retired == before
    after = {key["kid"] for key in client.get("/oauth/jwks").json()["keys"]}
    assert after == before | {purposes[p]["kid"] for p in ("id-token RS256", "id-token ES256")}
