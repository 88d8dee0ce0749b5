"""The current event's products (/admin/products, admin/products.py and
registrations/products.py), on both databases: made and changed from what an administrator
types, in the instance's currency, never below the places already held."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.registrations.models import OrderStatus, Product
from tests.admin.registering import count, ended, make_product, paid, registered
from tests.admin.support import BASE_URL, People, person
from tests.client import TestClient
from tests.conftest import PUBLIC_URL
from tests.volunteers.support import field_error
from tests.web.support import audit, make_user, signed_in


def fields(**typed: str) -> dict[str, str]:
    """The product form as a browser sends it: every field, `public` ticked."""
    return {
        "name": "sponsor",
        "displayName": "Sponsor",
        "description": "",
        "price": "120.00",
        "capacity": "300",
        "opensAt": "",
        "closesAt": "",
        "public": "true",
        "position": "",
        **typed,
    }


def stored(engine: Engine, product_id: int) -> Product:
    with Session(engine) as session:
        return session.get_one(Product, product_id)


def product_id_in(location: str) -> int:
    found = re.fullmatch(r"/admin/products/(\d+)\?done=\w+", location)
    assert found is not None, location
    return int(found.group(1))


def test_an_admin_creates_a_product_and_the_list_shows_it_with_its_places(
    people: People, engine: Engine
) -> None:
    made = people.admin.post(
        "/admin/products/new",
        fields(description="Thanks!\r\nA better badge.", opensAt="2026-01-02T09:30"),
    )
    assert made.status_code == 303
    product_id = product_id_in(made.headers["location"])
    assert "The product was created." in people.admin.get(made.headers["location"]).text
    product = stored(engine, product_id)
    assert (product.name, product.display_name, product.price) == ("sponsor", "Sponsor", 12000)
    assert isinstance(product.price, int)
    assert product.description == "Thanks!\nA better badge."
    assert (product.capacity, product.public, product.position) == (300, True, 10)
    assert product.opens_at == dt.datetime(2026, 1, 2, 9, 30, tzinfo=dt.UTC)
    assert product.closes_at is None
    (event,) = audit(engine, "product.created")
    assert (event.target_type, event.target_id) == ("product", str(product_id))
    assert event.details == {"name": "sponsor", "price": 12000, "capacity": 300}

    # Two orders hold places (one paid), one cancelled frees its own.
    for username, then in (("fox", "paid"), ("owl", None), ("elk", "cancelled")):
        held = registered(engine, make_user(engine, username), product_id)
        if then == "paid":
            paid(engine, held)
        elif then == "cancelled":
            ended(engine, held, OrderStatus.CANCELLED)
    listing = people.admin.get("/admin/products")
    assert listing.status_code == 200
    row = re.search(r"<tr>\s*<th scope=\"row\"><a href=\"/admin/products/\d+\">sponsor</a>.*?</tr>",
                    listing.text, re.S)  # fmt: skip
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    text = [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]
    assert text[:6] == ["Sponsor", "$120.00", "300", "1", "1", "298"]
    assert text[6] == "2026-01-02 09:30 – …"
    assert text[7] == "Everyone"


def test_an_admin_changes_a_product_and_the_audit_names_what_changed(
    people: People, engine: Engine
) -> None:
    product_id = make_product(engine, "sponsor", price="120", capacity="300")
    page = people.admin.get(f"/admin/products/{product_id}")
    assert page.status_code == 200
    assert 'value="120.00"' in page.text  # the amount as typed, not "$120.00"
    assert "UTC" in page.text
    changed = people.admin.post(
        f"/admin/products/{product_id}",
        fields(displayName="", price="99.5", capacity="", public="", closesAt="2027-06-01T00:00"),
    )
    assert changed.status_code == 303
    assert changed.headers["location"] == f"/admin/products/{product_id}?done=saved"
    product = stored(engine, product_id)
    assert (product.price, product.capacity, product.public) == (9950, None, False)
    assert product.display_name is None
    assert product.closes_at == dt.datetime(2027, 6, 1, tzinfo=dt.UTC)
    (event,) = audit(engine, "product.updated")
    assert event.details == {"changed": ["price", "capacity", "closesAt", "public"]}
    listing = people.admin.get("/admin/products").text
    assert "$99.50" in listing
    assert "Staff only" in listing
    assert "no limit" in listing
    # The same values again change nothing, and say so.
    again = people.admin.post(
        f"/admin/products/{product_id}",
        fields(displayName="", price="99.50", capacity="", public="", closesAt="2027-06-01T00:00"),
    )
    assert again.headers["location"] == f"/admin/products/{product_id}?done=unchanged"
    assert len(audit(engine, "product.updated")) == 1


@pytest.mark.parametrize(
    ("typed", "field", "message"),
    [
        ({"name": "  "}, "name", "The name may not be empty."),
        ({"name": "taken"}, "name", "already has a product named 'taken'"),
        ({"name": "x" * 101}, "name", "longer than 100"),
        ({"displayName": "x" * 201}, "displayName", "longer than 200"),
        ({"description": "x" * 2001}, "description", "longer than 2000"),
        ({"price": ""}, "price", "must be an amount such as 120.00"),
        ({"price": "12.345"}, "price", "at most 2 decimals"),
        ({"price": "-1"}, "price", "must be an amount"),
        ({"price": "1e3"}, "price", "must be an amount"),
        ({"price": "20000000.01"}, "price", "at most $20,000,000.00"),
        ({"capacity": "-1"}, "capacity", "whole number from 0"),
        ({"capacity": "ten"}, "capacity", "whole number from 0"),
        ({"capacity": "9" * 500}, "capacity", "whole number from 0"),
        ({"opensAt": "tomorrow"}, "opensAt", "is not a date and time"),
        ({"opensAt": "2026-07-04T18:30+02:00"}, "opensAt", "is not a date and time"),
        (
            {"opensAt": "2026-07-04T18:30", "closesAt": "2026-07-04T18:30"},
            "closesAt",
            "must close after it opens",
        ),
        ({"position": "10001"}, "position", "whole number from 0 to 10,000"),
    ],
)
def test_a_product_that_does_not_make_sense_is_refused_field_by_field(
    people: People, engine: Engine, typed: dict[str, str], field: str, message: str
) -> None:
    make_product(engine, "taken")
    before = count(engine, Product)
    refused = people.admin.post("/admin/products/new", fields(**typed))
    assert refused.status_code == 400
    assert message in field_error(refused.text, field)
    assert f'href="#{field}"' in refused.text
    assert count(engine, Product) == before


def test_a_refused_change_writes_nothing_of_it(people: People, engine: Engine) -> None:
    product_id = make_product(engine, "sponsor", price="120")
    refused = people.admin.post(
        f"/admin/products/{product_id}", fields(name="patron", price="cheap", capacity="x")
    )
    assert refused.status_code == 400
    assert "must be an amount" in field_error(refused.text, "price")
    assert "whole number" in field_error(refused.text, "capacity")
    assert 'value="patron"' in refused.text  # what was typed stays in the form
    assert stored(engine, product_id).name == "sponsor"
    assert audit(engine, "product.updated") == []


def test_the_capacity_cannot_go_below_the_places_already_held(
    people: People, engine: Engine
) -> None:
    product_id = make_product(engine, "sponsor", capacity="5")
    holders = [registered(engine, make_user(engine, n), product_id) for n in ("fox", "owl", "elk")]
    paid(engine, holders[0])
    ended(engine, holders[2], OrderStatus.CANCELLED)
    refused = people.admin.post(f"/admin/products/{product_id}", fields(capacity="1"))
    assert refused.status_code == 400
    assert field_error(refused.text, "capacity") == (
        "2 live orders hold a place already: the capacity cannot be below 2."
    )
    assert stored(engine, product_id).capacity == 5
    # The cancelled order holds none: two places are enough.
    assert (
        people.admin.post(f"/admin/products/{product_id}", fields(capacity="2")).status_code == 303
    )
    assert stored(engine, product_id).capacity == 2


@pytest.fixture
def yen(engine: Engine, database_url: str) -> Iterator[TestClient]:
    """The same database served by an instance whose currency is the yen (no minor units),
    with the administrator signed in."""
    app: FastAPI = create_app(
        load_settings(database_url=database_url, public_url=PUBLIC_URL, currency="JPY")
    )
    make_user(engine, "yuki", permissions=["admin"])
    with TestClient(app, base_url=BASE_URL) as client:
        signed_in(client, "yuki")
        yield client


def test_prices_are_typed_and_shown_in_the_instances_currency(
    yen: TestClient, engine: Engine
) -> None:
    page = yen.get("/admin/products/new")
    assert "Price (JPY)" in page.text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token is not None
    form = {**fields(price="1,500"), "csrf_token": token.group(1)}
    made = yen.post("/admin/products/new", data=form, follow_redirects=False)
    assert made.status_code == 303
    assert stored(engine, product_id_in(made.headers["location"])).price == 1500
    assert "¥1,500" in yen.get("/admin/products").text
    refused = yen.post("/admin/products/new", data={**form, "name": "other", "price": "1500.50"})
    assert refused.status_code == 400
    assert "with no decimals" in field_error(refused.text, "price")


def test_products_are_for_administrators_only(people: People, engine: Engine, app: FastAPI) -> None:
    product_id = make_product(engine, "sponsor")
    for someone in (people.security_lead, people.attendee):
        assert someone.get("/admin/products").status_code == 403
        assert someone.post("/admin/products/new", fields(name="sneaky")).status_code == 403
        assert someone.post(f"/admin/products/{product_id}", fields(price="0")).status_code == 403
    assert 'href="/admin/products"' not in people.security_lead.get("/admin").text
    assert 'href="/admin/products"' in people.admin.get("/admin").text
    forged = people.admin.post("/admin/products/new", fields(name="forged"), token="forged")
    assert forged.status_code == 403
    assert "Form not accepted" in forged.text
    other = person(app, engine, "eve", permissions=["admin"])
    theirs = people.admin.post(
        f"/admin/products/{product_id}", fields(price="0"), token=other.csrf_token()
    )
    assert theirs.status_code == 403
    with Session(engine) as session:
        assert session.scalars(select(Product.name)).all() == ["sponsor"]
        assert session.get_one(Product, product_id).price == 6500


def test_an_unknown_product_is_a_404_page(people: People) -> None:
    for path in ("/admin/products/999", "/admin/products/abc"):
        page = people.admin.get(path)
        assert page.status_code == 404
        assert "No such product" in page.text
    assert people.admin.post("/admin/products/999", fields()).status_code == 404
