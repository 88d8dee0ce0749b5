"""profilePictureUrl is imported only as an https URL with a host, or http on a loopback host
(users/fields.py check_picture_url; ASVS V5.1.3, CWE-79): OBO clients put it in an `<img>`.
By JSON and by CSV alike, a refused one names its record and field, and nothing is written."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from regdesk.transfer.importer import ImportRejected, read_document
from regdesk.users.models import User
from tests.transfer.support import import_, table_rows

LONGEST = "https://cdn.example/" + "a" * (2000 - len("https://cdn.example/"))

# value -> accepted
URLS = {
    "javascript:alert(1)": False,
    "JavaScript:alert(1)": False,
    "data:image/svg+xml;base64,PHN2Zy8+": False,
    "http://evil.example/x.png": False,  # plain http beyond loopback
    " https://x": False,  # a browser strips the space: what it fetches is not what was checked
    "https://cdn.example/a\tb.png": False,  # ... and drops the tab
    "https://cdn.example\\@evil.example/": False,  # ... and reads \ as /
    "https://": False,  # no host
    "//evil.example/x": False,  # scheme-relative: not absolute
    "/avatars/fox.png": False,
    "https://cdn.example@evil.example/a.png": False,  # userinfo, to disguise the host
    "https://cdn.example:99999/a.png": False,  # a port out of range
    LONGEST + "a": False,  # longer than the column's 2000 characters
    "HTTPS://ok.example/a.png": True,  # RFC 3986 3.1: the scheme is case-insensitive
    "http://127.0.0.1/a.png": True,
    "http://127.1.2.3:8080/a.png": True,  # all of 127.0.0.0/8
    "http://[::1]/a.png": True,
    "http://localhost:5173/a.png": True,
    "https://cdn.example/a.png": True,
    "https://cdn.example/fox%20face.png?size=64#top": True,
    LONGEST: True,
}


def _user(index: int, url: str) -> dict[str, str]:
    return {
        "username": f"pic{index}",
        "email": f"pic{index}@example.org",
        "firstName": "Pic",
        "lastName": "Ture",
        "profilePictureUrl": url,
    }


def _stored(engine: Engine, username: str) -> str | None:
    with engine.connect() as connection:
        return connection.scalar(select(User.profile_picture_url).where(User.username == username))


def _outcomes(
    engine: Engine, documents: list[tuple[str, dict[str, Any]]], position: str
) -> dict[str, bool]:
    """Imports each (url, document); checks what a refusal says and that it wrote nothing, and
    that an accepted URL is stored as given. Returns url -> accepted."""
    outcomes = {}
    for index, (url, document) in enumerate(documents):
        before = table_rows(engine)
        errors: list[tuple[str, str]] = []
        try:
            import_(engine, document)
        except ImportRejected as refused:
            errors = refused.errors
        if errors:
            [(where, message)] = errors
            assert where == position, errors
            assert message, errors
            assert table_rows(engine) == before
        else:
            assert _stored(engine, f"pic{index}") == url
        outcomes[url] = not errors
    return outcomes


def test_json_import_takes_only_https_picture_urls(engine: Engine) -> None:
    documents = [(url, {"users": [_user(i, url)]}) for i, url in enumerate(URLS)]
    assert _outcomes(engine, documents, "users[0].profilePictureUrl") == URLS


def test_csv_import_takes_only_https_picture_urls(engine: Engine, tmp_path: Path) -> None:
    documents: list[tuple[str, dict[str, Any]]] = []
    for index, url in enumerate(URLS):
        user = _user(index, url)
        path = tmp_path / f"u{index}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows([list(user), list(user.values())])
        documents.append((url, read_document(path)))
    outcomes = _outcomes(engine, documents, "users[0] (CSV line 2).profilePictureUrl")
    assert outcomes == URLS


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,<script>x</script>"])
def test_a_refusal_names_the_record_and_the_field(engine: Engine, url: str) -> None:
    users = [_user(i, "https://cdn.example/ok.png") for i in range(3)] + [_user(3, url)]
    before = table_rows(engine)
    with pytest.raises(ImportRejected) as caught:
        import_(engine, {"users": users})
    [(position, message)] = caught.value.errors
    assert position == "users[3].profilePictureUrl"
    assert "is not an absolute https URL" in message
    assert table_rows(engine) == before  # not even the good records before it
