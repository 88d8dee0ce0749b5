"""The site's icon: linked by every page as SVG, and at /favicon.ico for browsers that ask there
whatever the page says (issue 22: a 404 on every page)."""

from __future__ import annotations

import re

from tests.client import TestClient

# An ICO file starts with a reserved 0 and type 1 (an icon), then its number of images.
ICO_HEADER = b"\x00\x00\x01\x00"


def test_favicon_ico_is_an_icon(client: TestClient) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response.content.startswith(ICO_HEADER)
    assert response.headers["content-type"] in ("image/vnd.microsoft.icon", "image/x-icon")
    assert len(response.content) < 4096  # a tiny file, cached a day
    assert "max-age" in response.headers["cache-control"]


def test_every_page_links_the_svg_icon_which_is_served(client: TestClient) -> None:
    page = client.get("/login")
    link = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', page.text)
    assert link, "the base template links no icon"
    icon = client.get(link.group(1))
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.text.startswith("<svg")
