"""A user's own registration and orders through their token (registrations.md, API, OBO):
con:read reads the user's own registration, and no one else's; pii:finance:read lists the
user's orders for the current event. On both databases."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import Engine, update

from regdesk.db import write_session
from regdesk.events.models import Event
from regdesk.formats import format_timestamp
from regdesk.registrations.models import Order, OrderStatus
from regdesk.registrations.ordering import end_order
from tests.api.support import assert_not_found, headers
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.registrations.test_api import KEYS, pay, registration_of
from tests.registrations.test_ordering import ACTOR, order, product
from tests.web.support import make_user

CURRENT = "/api/users/current/registration"
ORDERS = "/api/users/current/orders"


def users_token(apps: Apps, user_id: int, scopes: str) -> dict[str, str]:
    """The headers of a token `user_id` granted an application (OBO) with `scopes`."""
    return bearer(apps.mint(apps.register(obo_scopes=scopes), scopes, user_id=user_id))


def assert_refused(response: httpx.Response, scope: str) -> None:
    """decisions.md, Errors: the 403 envelope naming the scope that would do."""
    assert response.status_code == 403, response.text
    assert response.json() == {
        "errors": {
            "access": {"message": f"This action needs the scope {scope}.", "permissions": [scope]}
        }
    }
    assert response.headers["www-authenticate"] == (
        f'Bearer error="insufficient_scope", scope="{scope}"'
    )


def cancel(engine: Engine, order_id: int, status: OrderStatus = OrderStatus.CANCELLED) -> None:
    with write_session(engine) as session:
        end_order(session, ACTOR, session.get_one(Order, order_id), status)


def test_con_read_reads_the_users_own_registration_by_either_route(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox = make_user(engine, "fox")
    placed = order(engine, fox, product(engine), badge_name="Fae the Fox")
    service = registration_of(client, headers(apps, "registration:read"), fox)
    assert service.status_code == 200, service.text
    own = users_token(apps, fox, "con:read")

    by_id = registration_of(client, own, fox)
    current = client.get(CURRENT, headers=own)

    assert by_id.status_code == 200, by_id.text
    assert current.status_code == 200, current.text
    assert list(current.json()) == KEYS
    assert by_id.json() == current.json() == service.json()
    assert current.json()["id"] == placed.registration.id


def test_con_read_reads_no_other_users_registration(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox, wolf = make_user(engine, "fox"), make_user(engine, "wolf")
    attendee = product(engine)
    order(engine, fox, attendee)
    order(engine, wolf, attendee)
    own = users_token(apps, fox, "con:read")
    # Another user, registered or not, real or not: 403, never a hint of which.
    for other in (wolf, 999999, "0", "abc", f"0{fox}x", "9" * 30):
        assert_refused(registration_of(client, own, other), "registration:read")
    # Many scopes, but not con:read: the 403 names the one that would do for one's own.
    profile = users_token(apps, fox, "pii:basic pii:email pii:finance:read")
    assert_refused(registration_of(client, profile, fox), "con:read")
    assert_refused(client.get(CURRENT, headers=profile), "con:read")
    assert_refused(registration_of(client, profile, wolf), "registration:read")


def test_a_service_token_with_registration_read_still_reads_any_user(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox = make_user(engine, "fox")
    order(engine, fox, product(engine))
    assert registration_of(client, headers(apps, "registration:read"), fox).status_code == 200
    assert_refused(registration_of(client, headers(apps, "user:read"), fox), "registration:read")
    # A service cannot hold con:read (an OBO scope): the current user's routes are not its.
    assert_refused(client.get(CURRENT, headers=headers(apps, "registration:read")), "con:read")


def test_the_current_users_registration_is_not_found_when_there_is_none(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox = make_user(engine, "fox")
    own = users_token(apps, fox, "con:read")
    assert_not_found(client.get(CURRENT, headers=own), "Registration not found.")
    assert_not_found(registration_of(client, own, fox), "Registration not found.")
    placed = order(engine, fox, product(engine))
    assert client.get(CURRENT, headers=own).json()["id"] == placed.registration.id
    cancel(engine, placed.order.id)  # no longer live: not shown
    assert_not_found(client.get(CURRENT, headers=own), "Registration not found.")


def orders(client: TestClient, auth: dict[str, str]) -> list[dict[str, Any]]:
    response = client.get(ORDERS, headers=auth)
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == ["data"], body
    data: list[dict[str, Any]] = body["data"]
    return data


def test_the_users_orders_are_every_order_of_the_current_event_newest_first(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox, wolf = make_user(engine, "fox"), make_user(engine, "wolf")
    attendee = product(engine, price=6500)
    sponsor = product(engine, "sponsor", price=12050)
    cancelled = order(engine, fox, attendee)
    cancel(engine, cancelled.order.id)
    refunded = order(engine, fox, sponsor)
    pay(engine, refunded.order.id)
    cancel(engine, refunded.order.id, OrderStatus.REFUNDED)
    live = order(engine, fox, attendee)
    order(engine, wolf, sponsor)  # someone else's
    auth = users_token(apps, fox, "pii:finance:read")

    found = orders(client, auth)

    with write_session(engine) as session:
        rows = {o.number: o for o in session.query(Order).where(Order.user_id == fox)}
        created = {n: format_timestamp(o.created_at) for n, o in rows.items()}
        paid_at = format_timestamp(rows[refunded.order.number].paid_at)  # type: ignore[arg-type]
    assert found == [
        {
            "orderId": live.order.number,
            "status": "unpaid",
            "productId": str(attendee),
            "productName": "attendee",
            "amount": 6500,
            "currency": "EUR",  # the order's own, as it was placed
            "paymentMethod": None,
            "createdAt": created[live.order.number],
            "paidAt": None,
        },
        {
            "orderId": refunded.order.number,
            "status": "refunded",
            "productId": str(sponsor),
            "productName": "sponsor",
            "amount": 12050,
            "currency": "EUR",
            "paymentMethod": "desk",
            "createdAt": created[refunded.order.number],
            "paidAt": paid_at,
        },
        {
            "orderId": cancelled.order.number,
            "status": "cancelled",
            "productId": str(attendee),
            "productName": "attendee",
            "amount": 6500,
            "currency": "EUR",
            "paymentMethod": None,
            "createdAt": created[cancelled.order.number],
            "paidAt": None,
        },
    ]
    assert all(type(o["amount"]) is int for o in found)  # minor units, never a float
    assert orders(client, users_token(apps, wolf, "pii:finance:read"))[0]["productName"] == (
        "sponsor"
    )


def test_orders_of_an_earlier_event_are_not_listed(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox = make_user(engine, "fox")
    order(engine, fox, product(engine))
    auth = users_token(apps, fox, "pii:finance:read")
    assert len(orders(client, auth)) == 1
    with write_session(engine) as session:
        session.execute(update(Event).values(is_current=False))
        session.flush()
        session.add(Event(name="Next year", is_current=True))
    assert orders(client, auth) == []
    again = order(engine, fox, product(engine, "attendee 2027"))
    assert [o["orderId"] for o in orders(client, auth)] == [again.order.number]


def test_orders_need_pii_finance_read_on_a_users_token(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox = make_user(engine, "fox")
    order(engine, fox, product(engine))
    assert_refused(
        client.get(ORDERS, headers=users_token(apps, fox, "con:read")), "pii:finance:read"
    )
    assert_refused(
        client.get(ORDERS, headers=headers(apps, "registration:read")), "pii:finance:read"
    )
    assert client.get(ORDERS).status_code == 401
