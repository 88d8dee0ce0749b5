"""Where a visitor may be sent next: a local path, or an application's registered origin."""

from __future__ import annotations

import pytest

from regdesk.web.redirects import local_path, same_origin_as_any


@pytest.mark.parametrize(
    "next_", ["/", "/account", "/oauth/authorize?client_id=1&state=a%7Cb", "/a//b", "/%2F%2Fx"]
)
def test_local_paths_are_kept(next_: str) -> None:
    assert local_path(next_) == next_


@pytest.mark.parametrize(
    "next_",
    [
        None,
        "",
        "account",
        "https://evil.example/",
        "//evil.example",
        "///evil.example",
        "/\\evil.example",
        "/\\/evil.example",
        "\\\\evil.example",
        "/\t/evil.example",
        "/\n/evil.example",
        "/ /evil.example",
        "javascript:alert(1)",
        "/caf\u00e9",
        "/" + "a" * 20000,
    ],
    ids=repr,
)
def test_anything_else_is_refused(next_: str | None) -> None:
    assert local_path(next_) is None


REGISTERED = ["https://app.example/cb", "http://127.0.0.1:8123/back"]


@pytest.mark.parametrize(
    "next_",
    [
        "https://app.example/",
        "https://app.example/logged-out?bye=1",
        "https://APP.example:443/x",
        "http://127.0.0.1:8123/",
    ],
)
def test_an_address_at_a_registered_origin_is_kept(next_: str) -> None:
    assert same_origin_as_any(next_, REGISTERED) == next_


@pytest.mark.parametrize(
    "next_",
    [
        None,
        "",
        "/local",
        "http://app.example/",  # another scheme
        "https://app.example:8443/",  # another port
        "https://app.example.evil.example/",
        "https://evil.example/?https://app.example/",
        "https://app.example@evil.example/",
        "https://evil.example\\@app.example/",  # a browser goes to evil.example
        "https://evil.example\t@app.example/",
        "http://127.0.0.1:8124/",
        "http://localhost:8123/",
        "javascript://app.example/%0aalert(1)",
        "https://app.example:99999/",
    ],
    ids=repr,
)
def test_an_address_anywhere_else_is_refused(next_: str | None) -> None:
    assert same_origin_as_any(next_, REGISTERED) is None
