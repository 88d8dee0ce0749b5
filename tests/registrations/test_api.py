"""Registration records (registrations.md, API): a user's live registration and the search,
on both databases, with the documents kept in step with the tables."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, select

from regdesk.db import write_session
from regdesk.formats import format_timestamp
from regdesk.registrations.models import (
    Order,
    OrderStatus,
    PaymentMethod,
    Product,
    Registration,
    RegistrationFlag,
    RegistrationFlagLink,
)
from regdesk.registrations.ordering import end_order, mark_paid
from regdesk.users.models import User
from tests.api.support import assert_not_found, headers, validation_fields, walk
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.registrations.test_ordering import ACTOR, order, product
from tests.web.support import make_user

SEARCH = "/api/v0/registration/search"
KEYS = [  # registrations.md's JSON example, in its order
    "id",
    "createdAt",
    "updatedAt",
    "badgeName",
    "status",
    "productId",
    "productName",
    "productDisplayName",
    "order",
    "options",
    "flags",
    "user",
]


def registration_of(client: TestClient, auth: dict[str, str], user_id: int | str) -> Any:
    return client.get(f"/api/v0/users/{user_id}/registration", headers=auth)


def search(client: TestClient, auth: dict[str, str], body: dict[str, Any]) -> list[int]:
    """The registration ids every page of a search finds."""
    return [r["id"] for page in walk(client, SEARCH, auth, body) for r in page["data"]]


def pay(engine: Engine, order_id: int) -> None:
    with write_session(engine) as session:
        mark_paid(session, ACTOR, session.get_one(Order, order_id), method=PaymentMethod.DESK,
                  reference=None)  # fmt: skip


def flag(engine: Engine, registration_id: int, short_name: str) -> int:
    with write_session(engine) as session:
        registration = session.get_one(Registration, registration_id)
        made = RegistrationFlag(event_id=registration.event_id, short_name=short_name)
        session.add(made)
        session.flush()
        session.add(RegistrationFlagLink(registration_id=registration_id, flag_id=made.id))
        return made.id


def test_a_users_registration_is_the_record_of_registrations_md(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox = make_user(engine, "fox")
    sponsor = product(engine, "sponsor", display_name="Sponsor", price=12000)
    placed = order(engine, fox, sponsor, badge_name="Fae the Fox")
    pay(engine, placed.order.id)
    second = flag(engine, placed.registration.id, "staff")
    first = flag(engine, placed.registration.id, "fursuits")
    with write_session(engine) as session:
        registration = session.get_one(Registration, placed.registration.id)
        created, updated = registration.created_at, registration.updated_at
    auth = headers(apps, "registration:read")

    response = registration_of(client, auth, fox)

    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    record = response.json()
    assert list(record) == KEYS
    assert record == {
        "id": placed.registration.id,
        "createdAt": format_timestamp(created),
        "updatedAt": format_timestamp(updated),
        "badgeName": "Fae the Fox",
        "status": "paid",
        "productId": str(sponsor),
        "productName": "sponsor",
        "productDisplayName": "Sponsor",
        "order": {"orderId": placed.order.number, "status": "paid"},
        "options": [],  # the event asks no registration options here
        "flags": [  # in flag id order
            {"id": str(second), "shortName": "staff"},
            {"id": str(first), "shortName": "fursuits"},
        ],
        "user": {  # api.md 2.3
            "id": str(fox),
            "firstName": "Fae",
            "lastName": "Fox",
            "username": "fox",
            "preferredName": None,
            "phone": None,
            "email": "fox@example.org",
        },
    }
    assert client.post(SEARCH, json={}, headers=auth).json()["data"] == [record]


def test_no_registration_and_no_user_are_registration_not_found(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox = make_user(engine, "fox")
    auth = headers(apps, "registration:read")
    for user_id in [fox, 999999, "0", "abc", "-1", "9" * 30]:
        assert_not_found(registration_of(client, auth, user_id), "Registration not found.")


def test_a_cancelled_or_refunded_registration_is_not_shown(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    fox, wolf = make_user(engine, "fox"), make_user(engine, "wolf")
    attendee = product(engine)
    cancelled, refunded = order(engine, fox, attendee), order(engine, wolf, attendee)
    pay(engine, refunded.order.id)
    auth = headers(apps, "registration:read")
    assert search(client, auth, {}) == [cancelled.registration.id, refunded.registration.id]
    with write_session(engine) as session:
        end_order(session, ACTOR, session.get_one(Order, cancelled.order.id), OrderStatus.CANCELLED)
        end_order(session, ACTOR, session.get_one(Order, refunded.order.id), OrderStatus.REFUNDED)
    for user_id in (fox, wolf):
        assert_not_found(registration_of(client, auth, user_id), "Registration not found.")
    assert search(client, auth, {}) == []
    # Registering again makes a new live registration, the one shown.
    again = order(engine, fox, attendee)
    assert registration_of(client, auth, fox).json()["id"] == again.registration.id
    assert search(client, auth, {}) == [again.registration.id]


def test_search_filters_by_user_status_and_product(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    users = [make_user(engine, name) for name in ("fox", "wolf", "owl", "cat")]
    attendee, sponsor = product(engine), product(engine, "sponsor")
    placed = [order(engine, users[0], attendee), order(engine, users[1], sponsor),
              order(engine, users[2], attendee), order(engine, users[3], sponsor)]  # fmt: skip
    ids = [p.registration.id for p in placed]
    pay(engine, placed[0].order.id)
    pay(engine, placed[1].order.id)
    auth = headers(apps, "registration:read")

    assert search(client, auth, {}) == ids
    assert search(client, auth, {"filter": {}}) == ids
    assert search(client, auth, {"filter": None}) == ids
    # User ids as strings of digits or integers (real clients send both), in any order.
    assert search(client, auth, {"filter": {"userIds": [str(users[2]), users[0]]}}) == [
        ids[0],
        ids[2],
    ]
    assert search(client, auth, {"filter": {"userIds": [users[1]]}}) == [ids[1]]
    for nobody in ([], [999999], ["0"], [-1], [2**31], ["9" * 40]):
        assert search(client, auth, {"filter": {"userIds": nobody}}) == [], nobody
    assert search(client, auth, {"filter": {"status": "paid"}}) == ids[:2]
    assert search(client, auth, {"filter": {"status": "unpaid"}}) == ids[2:]
    assert search(client, auth, {"filter": {"productIds": [str(sponsor)]}}) == [ids[1], ids[3]]
    assert search(client, auth, {"filter": {"productIds": [attendee, sponsor]}}) == ids
    # Members combine with AND.
    both = {"status": "unpaid", "productIds": [sponsor], "userIds": users}
    assert search(client, auth, {"filter": both}) == [ids[3]]
    records = client.post(SEARCH, json={"filter": {"status": "paid"}}, headers=auth).json()
    assert [r["status"] for r in records["data"]] == ["paid", "paid"]


def test_a_bad_filter_is_a_400_naming_the_field(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    make_user(engine, "fox")
    auth = headers(apps, "registration:read")
    bad = {
        "filter.email": {"email": "fox@example.org"},
        "filter.userId": {"userId": 1},
        "filter.userIds": {"userIds": ["1", "fox"]},
    }
    for member in ([1.5], [True], [None], ["1 "], ["-1"], ["١"], "1", 1, list(range(101))):
        bad[f"filter.userIds {member!r}"[:40]] = {"userIds": member}
    for name, members in bad.items():
        response = client.post(SEARCH, json={"filter": members}, headers=auth)
        assert list(validation_fields(response)) == [name.split()[0]], (name, response.text)
    for status in ("cancelled", "refunded", "PAID", 1):
        response = client.post(SEARCH, json={"filter": {"status": status}}, headers=auth)
        assert list(validation_fields(response)) == ["filter.status"], status
    response = client.post(SEARCH, json={"filter": {"productIds": ["x"]}}, headers=auth)
    assert list(validation_fields(response)) == ["filter.productIds"]
    for limit in (0, 101, "10"):
        response = client.post(SEARCH, json={"limit": limit}, headers=auth)
        assert list(validation_fields(response)) == ["limit"], limit


def test_pages_cover_every_registration_once(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    attendee = product(engine)
    users = [make_user(engine, f"user{i}") for i in range(7)]
    ids = [order(engine, user, attendee).registration.id for user in users]
    auth = headers(apps, "registration:read")
    pages = walk(client, SEARCH, auth, {"limit": 3})
    assert [len(page["data"]) for page in pages] == [3, 3, 1]
    assert [page["hasMore"] for page in pages] == [True, True, False]
    assert [r["id"] for page in pages for r in page["data"]] == ids
    # A cursor belongs to its filter.
    first = client.post(SEARCH, json={"limit": 3}, headers=auth).json()
    response = client.post(
        SEARCH,
        json={"limit": 3, "nextPage": first["nextPage"], "filter": {"status": "paid"}},
        headers=auth,
    )
    assert list(validation_fields(response)) == ["nextPage"]
    # A filter given as strings or as integers is the same filter for its cursor.
    as_strings = {"limit": 1, "filter": {"userIds": [str(u) for u in users]}}
    page = client.post(SEARCH, json=as_strings, headers=auth).json()
    assert page["nextPage"]
    following = {"limit": 1, "filter": {"userIds": users}, "nextPage": page["nextPage"]}
    response = client.post(SEARCH, json=following, headers=auth)
    assert [r["id"] for r in response.json()["data"]] == ids[1:2], response.text


def test_changes_show_in_the_next_read(client: TestClient, apps: Apps, engine: Engine) -> None:
    fox = make_user(engine, "fox")
    attendee = product(engine, display_name="Attendee")
    placed = order(engine, fox, attendee, badge_name="Fae")
    auth = headers(apps, "registration:read")

    def read() -> dict[str, Any]:
        record: dict[str, Any] = registration_of(client, auth, fox).json()
        assert client.post(SEARCH, json={}, headers=auth).json()["data"] == [record]
        return record

    assert read()["user"]["firstName"] == "Fae"
    with write_session(engine) as session:
        session.get_one(User, fox).first_name = "Faye"
    assert read()["user"]["firstName"] == "Faye"
    with write_session(engine) as session:
        session.get_one(Product, attendee).display_name = "Full attendee"
    assert read()["productDisplayName"] == "Full attendee"
    flag_id = flag(engine, placed.registration.id, "fursuits")
    assert read()["flags"] == [{"id": str(flag_id), "shortName": "fursuits"}]
    with write_session(engine) as session:
        session.get_one(RegistrationFlag, flag_id).short_name = "fursuiter"
    assert read()["flags"] == [{"id": str(flag_id), "shortName": "fursuiter"}]
    with write_session(engine) as session:
        session.get_one(Registration, placed.registration.id).badge_name = "Faye the Fox"
    assert read()["badgeName"] == "Faye the Fox"
    pay(engine, placed.order.id)
    assert read()["status"] == "paid"
    assert read()["order"]["status"] == "paid"
    with write_session(engine) as session:
        session.delete(session.scalars(select(RegistrationFlagLink)).one())
    assert read()["flags"] == []


def test_the_discord_bots_two_calls(client: TestClient, apps: Apps, engine: Engine) -> None:
    """decisions.md: scope as repeated form fields, a user found by e-mail, then their
    registration's order number compared with the one a member typed."""
    fox = make_user(engine, "fox")
    placed = order(engine, fox, product(engine))
    bot = apps.register(service_scopes="user:read registration:read")
    response = client.post(
        "/api/oauth/token",
        content=(
            f"grant_type=client_credentials&client_id={bot.client_id}"
            f"&client_secret={bot.client_secret}&scope=user:read&scope=registration:read"
        ),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200, response.text
    auth = bearer(response.json()["access_token"])

    users = client.post(
        "/api/v0/users/search", json={"filter": {"email": "FOX@example.org"}}, headers=auth
    )
    assert users.status_code == 200, users.text
    user_id = int(users.json()["data"][0]["id"])
    found = client.post(SEARCH, json={"filter": {"userIds": [user_id]}, "limit": 1}, headers=auth)
    assert found.status_code == 200, found.text
    assert int(found.json()["data"][0]["order"]["orderId"]) == int(placed.order.number)
