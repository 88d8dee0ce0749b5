"""WCAG 2.1 AA contrast (1.4.3 text, 1.4.11 form controls) on every page an organizer or an
attendee opens, as the browser renders it: each piece of visible text against the background
behind it, and each text field's border against its surroundings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from regdesk.db import write_session
from regdesk.events.service import current_event_for_writing
from regdesk.registrations.models import Product, RegistrationOption
from tests.e2e.admin_site import AdminSite, admin_site

# Every admin page without a record in its path, the volunteer and registration forms and the
# account page.
PAGES = [
    "/admin",
    "/admin/users",
    "/admin/roles",
    "/admin/departments",
    "/admin/volunteers",
    "/admin/options",
    "/admin/options/new",
    "/admin/applications",
    "/admin/applications/new",
    "/admin/transfer",
    "/admin/audit",
    "/volunteer",
    "/register",
    "/account",
]

# For each element with its own text: its colour, the first opaque background behind it, and
# whether it counts as large text (24 px, or 18.66 px bold); for each text field, its border.
FIELDS = (
    "input[type=text], input[type=email], input[type=number], input[type=password], "
    "input:not([type]), select, textarea"
)
MEASURE = """(fields) => {
  const rgb = (value) => (value.match(/[\\d.]+/g) || []).map(Number);
  const background = (element) => {
    for (let node = element; node; node = node.parentElement) {
      const color = rgb(getComputedStyle(node).backgroundColor);
      if (color.length === 3 || color[3] === 1) return color.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const found = [];
  for (const element of document.querySelectorAll("body *")) {
    const style = getComputedStyle(element);
    const box = element.getBoundingClientRect();
    if (style.visibility === "hidden" || box.width === 0 || box.height === 0) continue;
    const own = [...element.childNodes].some(
      (n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
    const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight, 10) >= 700;
    const what = element.tagName + ": " + element.textContent.trim().slice(0, 40);
    if (own) found.push({kind: "text", what, fore: rgb(style.color).slice(0, 3),
      back: background(element), large: size >= 24 || (bold && size >= 18.66)});
    if (element.matches(fields)) found.push({kind: "control", what: element.id || element.tagName,
      fore: rgb(style.borderTopColor).slice(0, 3), back: background(element.parentElement),
      large: false});
  }
  return found;
}"""


def contrast(fore: list[float], back: list[float]) -> float:
    def luminance(rgb: list[float]) -> float:
        channels = [c / 255 for c in rgb]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    lighter, darker = sorted((luminance(fore), luminance(back)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdminSite]:
    with admin_site(tmp_path_factory.mktemp("e2e-contrast")) as running:
        with write_session(running.engine) as session:  # /register: a product sold out too
            event = current_event_for_writing(session)
            for name, capacity in (("attendee", 300), ("sponsor", 0)):
                session.add(Product(event_id=event.id, name=name, price=6500, capacity=capacity))
            session.add(
                RegistrationOption(event_id=event.id, name="Size", type="select", choices=["S"])
            )
        yield running


def test_every_page_meets_the_contrast_minimums(page: Page, site: AdminSite) -> None:
    site.sign_in(page, "/admin")
    too_faint: list[str] = []
    measured = 0
    for path in PAGES:
        page.goto(f"{site.base}{path}")
        assert page.url == f"{site.base}{path}", f"{path} did not open for the administrator"
        for item in page.evaluate(MEASURE, FIELDS):
            measured += 1
            needed = 3.0 if item["kind"] == "control" or item["large"] else 4.5
            ratio = contrast(item["fore"], item["back"])
            if ratio < needed:
                too_faint.append(f"{path} {item['what']!r}: {ratio:.2f} < {needed}")
    assert measured > 300, "the pages showed hardly anything to measure"
    assert too_faint == []
