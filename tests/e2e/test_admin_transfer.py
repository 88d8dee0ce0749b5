"""Import and export from the browser, against `regdesk serve`.

An administrator uploads a small import document and finds its person through the API as a
tool reads them (api.md 2.2); a document with a bad record is refused with that record named
and nothing written; the export downloads as the same JSON document, holding that person; and
the audit log shows the import and the export. Screenshots: build/screenshots/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.admin_site import AdminSite, admin_site
from tests.e2e.support import screenshot

LYNX: dict[str, Any] = {
    "username": "lynx",
    "email": "Lynx@Example.org",
    "firstName": "Lee",
    "lastName": "Lynx",
    "preferredName": "Lee L.",
    "phone": "(775) 555-0199",
    "verified": True,
    "address": {
        "addressLine1": "2 Pine St",
        "addressLine2": None,
        "addressCity": "Reno",
        "addressState": "NV",
        "addressZipcode": "89501",
        "addressCountry": "US",
    },
    "roles": ["Staff"],
}
DOCUMENT = {"roles": [{"name": "Staff", "staff": True}], "users": [LYNX]}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdminSite]:
    with admin_site(tmp_path_factory.mktemp("e2e-admin-transfer")) as running:
        yield running


def choose_and_import(page: Page, path: Path) -> None:
    page.get_by_label("Document (.json or .csv)").set_input_files(path)
    page.get_by_role("button", name="Import", exact=True).click()


def test_an_administrator_imports_a_document_and_downloads_the_export(
    page: Page, site: AdminSite, tmp_path: Path
) -> None:
    site.sign_in(page, "/admin/transfer")
    expect(page.get_by_role("heading", name="Import and export")).to_be_visible()

    # A document with a bad record: refused, each problem named, nothing written.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"users": [{**LYNX, "roles": [], "phone": "12"}]}))
    choose_and_import(page, bad)
    expect(page.get_by_role("heading", name="Nothing was imported")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("users[0].phone")
    screenshot(page, "admin-transfer-refused")
    assert "lynx" not in [user["username"] for user in site.users()]

    # The good document: imported, with its counts.
    good = tmp_path / "convention.json"
    good.write_text(json.dumps(DOCUMENT))
    choose_and_import(page, good)
    result = page.get_by_role("status")
    expect(result).to_contain_text("The document was imported.")
    expect(result.get_by_role("row", name=re.compile("^Users"))).to_have_text(
        re.compile(r"Users\s+1\s+0\s+0")
    )
    screenshot(page, "admin-transfer")

    # Through the API, as a tool reads the person (api.md 2.2).
    (lynx,) = [user for user in site.users() if user["username"] == "lynx"]
    expected = {
        "email": "Lynx@example.org",  # the domain normalised, the mailbox as written
        "preferredName": "Lee L.",
        "firstName": "Lee",
        "lastName": "Lynx",
        "username": "lynx",
        "verified": True,
        "phone": "+17755550199",
        "address": LYNX["address"],
    }
    assert {key: lynx.get(key) for key in expected} == expected
    assert isinstance(lynx["id"], str)
    assert lynx["id"].isdigit()

    # The export: a download of the same JSON document, holding that person.
    with page.expect_download() as waiting:
        page.get_by_role("button", name="Download the export").click()
    download = waiting.value
    assert re.fullmatch(r"regdesk-export-\d{4}-\d\d-\d\d\.json", download.suggested_filename)
    exported = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    (entry,) = [user for user in exported["users"] if user["username"] == "lynx"]
    assert entry["id"] == int(lynx["id"])
    assert (entry["email"], entry["phone"]) == ("Lynx@example.org", "+17755550199")
    assert entry["roles"] == [{"name": "Staff", "scope": "convention"}]
    assert {"roles", "users", "departments", "volunteers"} <= exported.keys()

    # Importing the export writes nothing new.
    again = tmp_path / download.suggested_filename
    again.write_text(json.dumps(exported))
    choose_and_import(page, again)
    expect(page.get_by_role("status").get_by_role("row", name=re.compile("^Users"))).to_have_text(
        re.compile(r"Users\s+0\s+0\s+\d+")
    )

    # The audit log has the import and the export.
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Audit log").click()
    for action in ("data.exported", "data.imported"):
        page.get_by_label("Action").select_option(action)
        page.get_by_role("button", name="Filter").click()
        rows = page.get_by_role("table").locator("tbody tr")
        expect(rows.first).to_contain_text(action)
        expect(rows.first).to_contain_text("user:1")
    expect(page.get_by_role("table").locator("tbody tr")).to_have_count(2)
