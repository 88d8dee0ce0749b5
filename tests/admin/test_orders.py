"""The current event's orders (/admin/orders, admin/orders.py), on both databases: found by
number, name or e-mail; marked paid, cancelled, refunded, moved to another product, each
through the services every way of registering uses, and seen by the API at once."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine

from regdesk.admin import orders as admin_orders
from regdesk.errors import Invalid
from regdesk.registrations.models import OrderStatus
from tests.admin.registering import (
    Held,
    api_registration,
    ended,
    make_product,
    order_row,
    paid,
    registered,
    registration_row,
)
from tests.admin.support import People
from tests.conftest import Apps
from tests.volunteers.support import field_error
from tests.web.support import audit, make_user


@dataclass(frozen=True)
class Shop:
    """Three products; fox's unpaid attendee order (the oldest), owl's unpaid sponsor order
    (its last place), elk's cancelled attendee order (the newest)."""

    attendee: int
    sponsor: int
    staff: int  # complimentary, sold by staff only
    fox: Held
    owl: Held
    elk: Held
    users: dict[str, int]


@pytest.fixture
def shop(engine: Engine, people: People) -> Shop:
    attendee = make_product(engine, "attendee", price="65", capacity="10")
    sponsor = make_product(engine, "sponsor", price="120", capacity="1", display_name="Sponsor")
    staff = make_product(engine, "staff", price="0", public=False)
    users = {name: make_user(engine, name) for name in ("fox", "owl", "elk")}
    fox = registered(engine, users["fox"], attendee, badge="Fae the Fox")
    owl = registered(engine, users["owl"], sponsor)
    elk = registered(engine, users["elk"], attendee)
    ended(engine, elk, OrderStatus.CANCELLED)
    return Shop(attendee, sponsor, staff, fox, owl, elk, users)


def listed(html: str) -> list[str]:
    """The order numbers of the list, in order."""
    return re.findall(r'<th scope="row"><a href="/admin/orders/(\d+)">', html)


@pytest.mark.postgresql_too
def test_an_admin_finds_orders_by_number_name_or_e_mail(people: People, shop: Shop) -> None:
    ada = people.admin
    every = ada.get("/admin/orders")
    assert every.status_code == 200
    assert listed(every.text) == [shop.elk.number, shop.owl.number, shop.fox.number]
    assert "3 orders." in every.text
    assert "$65.00" in every.text
    assert listed(ada.get(f"/admin/orders?q={shop.fox.number}").text) == [shop.fox.number]
    assert listed(ada.get("/admin/orders?q=owl").text) == [shop.owl.number]
    assert listed(ada.get("/admin/orders?q=ELK%40EXAMPLE.org").text) == [shop.elk.number]
    assert listed(ada.get("/admin/orders?q=fae+fox").text) == [shop.fox.number]
    assert listed(ada.get("/admin/orders?status=cancelled").text) == [shop.elk.number]
    assert listed(ada.get("/admin/orders?q=fae&status=unpaid").text) == [
        shop.owl.number,
        shop.fox.number,
    ]
    assert listed(ada.get("/admin/orders?q=%25").text) == []  # no wildcard
    assert listed(ada.get("/admin/orders?q=99999999").text) == []
    nothing = ada.get("/admin/orders?q=nobody&status=bogus")
    assert "No order matches." in nothing.text


@pytest.mark.postgresql_too
def test_the_list_is_paginated(people: People, shop: Shop, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_orders, "PER_PAGE", 2)
    first = people.admin.get("/admin/orders")
    assert listed(first.text) == [shop.elk.number, shop.owl.number]
    assert "page 1 of 2" in first.text
    assert 'href="/admin/orders?page=2" rel="next"' in first.text
    second = people.admin.get("/admin/orders?page=2")
    assert listed(second.text) == [shop.fox.number]
    assert 'href="/admin/orders" rel="prev"' in second.text
    filtered = people.admin.get("/admin/orders?status=unpaid")
    assert 'rel="next"' not in filtered.text


def test_an_order_page_shows_the_order_its_person_registration_and_history(
    people: People, shop: Shop
) -> None:
    page = people.admin.get(f"/admin/orders/{shop.fox.number}")
    assert page.status_code == 200
    assert f"Order {shop.fox.number}" in page.text
    assert "$65.00" in page.text
    assert f'href="/admin/users/{shop.users["fox"]}"' in page.text
    assert "fox@example.org" in page.text
    assert f'href="/admin/registrations/{shop.fox.registration_id}"' in page.text
    assert "Fae the Fox" in page.text
    assert "<code>order.created</code>" in page.text
    assert f'action="/admin/orders/{shop.fox.number}/pay"' in page.text
    assert f'action="/admin/orders/{shop.fox.number}/refund"' not in page.text


def test_an_admin_marks_an_order_paid_at_the_desk_with_a_reference(
    people: People, shop: Shop, apps: Apps, engine: Engine
) -> None:
    before = api_registration(apps, shop.users["fox"])
    assert before["status"] == "unpaid"
    done = people.admin.post(
        f"/admin/orders/{shop.fox.number}/pay", {"method": "desk", "reference": " R-0042 "}
    )
    assert done.status_code == 303
    assert done.headers["location"] == f"/admin/orders/{shop.fox.number}?done=paid"
    order = order_row(engine, shop.fox)
    assert (order.status, order.payment_method, order.payment_reference) == (
        "paid",
        "desk",
        "R-0042",
    )
    assert order.paid_at is not None
    record = api_registration(apps, shop.users["fox"])
    assert (record["status"], record["order"]) == (
        "paid",
        {"orderId": shop.fox.number, "status": "paid"},
    )
    (event,) = audit(engine, "order.paid")
    assert (event.target_type, event.target_id) == ("order", shop.fox.number)
    assert event.actor == f"user:{people.admin.user_id}"
    page = people.admin.get(done.headers["location"])
    assert "The order was marked paid." in page.text
    assert "<code>order.paid</code>" in page.text
    assert "R-0042" in page.text
    # Paying it again is refused, on the page, and changes nothing.
    again = people.admin.post(f"/admin/orders/{shop.fox.number}/pay", {"method": "transfer"})
    assert again.status_code == 400
    assert "Only an unpaid order can be paid; this one is paid." in again.text
    assert order_row(engine, shop.fox).payment_method == "desk"


@pytest.mark.parametrize(
    ("form", "field", "message"),
    [
        ({"method": "cash"}, "method", "Choose how the order was paid."),
        ({"method": ""}, "method", "Choose how the order was paid."),
        ({"method": "desk", "reference": "x" * 201}, "reference", "at most 200 characters"),
    ],
)
def test_a_payment_that_does_not_make_sense_is_refused(
    people: People, shop: Shop, engine: Engine, form: dict[str, str], field: str, message: str
) -> None:
    refused = people.admin.post(f"/admin/orders/{shop.fox.number}/pay", form)
    assert refused.status_code == 400
    assert message in field_error(refused.text, field)
    assert order_row(engine, shop.fox).status == "unpaid"
    assert audit(engine, "order.paid") == []


def test_cancelling_an_unpaid_order_ends_the_registration_and_frees_its_place(
    people: People, shop: Shop, apps: Apps, engine: Engine
) -> None:
    # The sponsor's one place is owl's: nobody else gets it.
    eve = make_user(engine, "eve")
    with pytest.raises(Invalid) as sold_out:
        registered(engine, eve, shop.sponsor)
    assert sold_out.value.errors == {"product": "Sold out."}
    refused = people.admin.post(f"/admin/orders/{shop.owl.number}/refund")
    assert refused.status_code == 400
    assert "Only a paid order can be refunded; this one is unpaid." in refused.text
    done = people.admin.post(f"/admin/orders/{shop.owl.number}/cancel")
    assert done.status_code == 303
    assert done.headers["location"] == f"/admin/orders/{shop.owl.number}?done=cancelled"
    assert order_row(engine, shop.owl).status == "cancelled"
    assert registration_row(engine, shop.owl).ended_at is not None
    assert api_registration(apps, shop.users["owl"]) == 404
    (event,) = [e for e in audit(engine, "order.cancelled") if e.target_id == shop.owl.number]
    assert event.details == {"before": {"status": "unpaid"}, "after": {"status": "cancelled"}}
    registered(engine, eve, shop.sponsor)  # the place is free again
    page = people.admin.get(done.headers["location"])
    assert "The order was cancelled" in page.text
    assert 'action="/admin/orders/' not in page.text  # nothing more to do to it


def test_refunding_a_paid_order_ends_the_registration(
    people: People, shop: Shop, apps: Apps, engine: Engine
) -> None:
    paid(engine, shop.fox)
    refused = people.admin.post(f"/admin/orders/{shop.fox.number}/cancel")
    assert refused.status_code == 400
    assert "Only an unpaid order can be cancelled; this one is paid." in refused.text
    assert order_row(engine, shop.fox).status == "paid"
    done = people.admin.post(f"/admin/orders/{shop.fox.number}/refund")
    assert done.status_code == 303
    assert order_row(engine, shop.fox).status == "refunded"
    assert api_registration(apps, shop.users["fox"]) == 404
    (event,) = audit(engine, "order.refunded")
    assert event.target_id == shop.fox.number


def test_an_unpaid_order_changes_product_at_the_new_price(
    people: People, shop: Shop, apps: Apps, engine: Engine
) -> None:
    number = shop.fox.number
    sold_out = people.admin.post(f"/admin/orders/{number}/product", {"product": shop.sponsor})
    assert sold_out.status_code == 400
    assert field_error(sold_out.text, "product") == "Sold out."
    unknown = people.admin.post(f"/admin/orders/{number}/product", {"product": "abc"})
    assert unknown.status_code == 400
    assert field_error(unknown.text, "product") == "No such product."
    assert order_row(engine, shop.fox).product_id == shop.attendee
    # A product only staff sell is theirs to choose.
    moved = people.admin.post(f"/admin/orders/{number}/product", {"product": shop.staff})
    assert moved.status_code == 303
    assert moved.headers["location"] == f"/admin/orders/{number}?done=product"
    order = order_row(engine, shop.fox)
    assert (order.product_id, order.amount) == (shop.staff, 0)
    assert api_registration(apps, shop.users["fox"])["productName"] == "staff"
    (event,) = audit(engine, "order.product_changed")
    assert event.details == {
        "before": {"product": "attendee", "amount": 6500},
        "after": {"product": "staff", "amount": 0},
    }
    same = people.admin.post(f"/admin/orders/{number}/product", {"product": shop.staff})
    assert same.headers["location"] == f"/admin/orders/{number}?done=unchanged"
    paid(engine, shop.fox)
    refused = people.admin.post(f"/admin/orders/{number}/product", {"product": shop.attendee})
    assert refused.status_code == 400
    assert 'href="#product">Only an unpaid order can change product.</a>' in refused.text
    assert order_row(engine, shop.fox).product_id == shop.staff


def test_orders_are_for_administrators_with_the_forms_token(
    people: People, shop: Shop, engine: Engine
) -> None:
    number = shop.fox.number
    for someone in (people.security_lead, people.attendee):
        assert someone.get("/admin/orders").status_code == 403
        assert someone.get(f"/admin/orders/{number}").status_code == 403
        for action, form in (
            ("pay", {"method": "comp"}),
            ("cancel", {}),
            ("product", {"product": str(shop.staff)}),
        ):
            assert someone.post(f"/admin/orders/{number}/{action}", form).status_code == 403
    assert 'href="/admin/orders"' not in people.security_lead.get("/admin").text
    for action in ("pay", "cancel", "refund", "product"):
        forged = people.admin.post(
            f"/admin/orders/{number}/{action}",
            {"method": "comp", "product": str(shop.staff)},
            token="forged",
        )
        assert forged.status_code == 403
        assert "Form not accepted" in forged.text
    order = order_row(engine, shop.fox)
    assert (order.status, order.product_id) == ("unpaid", shop.attendee)


def test_an_unknown_order_is_a_404_page(people: People, shop: Shop) -> None:
    for path in ("/admin/orders/1", "/admin/orders/abc", "/admin/orders/" + "9" * 30):
        page = people.admin.get(path)
        assert page.status_code == 404
        assert "No such order" in page.text
    assert people.admin.post("/admin/orders/1/pay", {"method": "desk"}).status_code == 404
