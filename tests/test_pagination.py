"""Paging through volunteer and user search (api.md 4.3, 4.7; decisions.md, Pagination)."""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, select

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.events.models import Event
from regdesk.roles.models import UserRole
from regdesk.users.models import User
from regdesk.volunteers.models import Volunteer
from tests.api.support import (
    app_engine,
    headers,
    import_rich,
    load_small_demo,
    statements,
    validation_fields,
    walk,
)
from tests.client import TestClient
from tests.conftest import Apps
from tests.transfer.support import import_

USERS = "/api/v0/users/search"
VOLUNTEERS = "/api/v0/volunteers/search"
SEARCHES = (USERS, VOLUNTEERS)


def identity(path: str, record: dict[str, Any]) -> str:
    """The user id a record names (volunteer records carry no id of their own)."""
    return str(record["id"] if path == USERS else record["user"]["id"])


def user_ids(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return [str(i) for i in connection.scalars(select(User.id).order_by(User.id))]


def volunteer_user_ids(engine: Engine) -> list[str]:
    """The users of the current event's volunteers, in volunteer-id order."""
    with engine.connect() as connection:
        return [
            str(i)
            for i in connection.scalars(
                select(Volunteer.user_id)
                .join(Event, Event.id == Volunteer.event_id)
                .where(Event.is_current)
                .order_by(Volunteer.id)
            )
        ]


def walked(client: TestClient, path: str, auth: dict[str, str], body: dict[str, Any]) -> list[str]:
    """Every record of every page, checking that pages are full but for the last."""
    pages = walk(client, path, auth, body)
    limit = body.get("limit", 100)
    assert all(len(page["data"]) == limit for page in pages[:-1])
    assert 0 < len(pages[-1]["data"]) <= limit or len(pages) == 1
    return [identity(path, record) for page in pages for record in page["data"]]


@pytest.fixture
def rich(engine: Engine) -> None:
    import_rich(engine)


# --- walking every page --------------------------------------------------------------------


def test_walking_users_sees_every_user_once_in_id_order(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    load_small_demo(engine, users=430, volunteers=30)
    auth = headers(apps, "user:read")
    everyone = user_ids(engine)
    assert len(everyone) == 430
    for body in ({"limit": 7}, {"limit": 100}, {}):
        assert walked(client, USERS, auth, body) == everyone, body
    with engine.connect() as connection:
        attendees = [
            str(i)
            for i in connection.scalars(
                select(UserRole.user_id).where(UserRole.role_id == 1).order_by(UserRole.user_id)
            )
        ]
    assert 100 < len(attendees) < 430
    for limit in (7, 100):
        filtered: dict[str, Any] = {"limit": limit, "filter": {"roleId": 1}}
        assert walked(client, USERS, auth, filtered) == attendees, filtered


def test_walking_volunteers_sees_every_current_volunteer_once_in_id_order(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    demo = load_small_demo(engine, users=300, volunteers=230)
    assert demo.past_volunteers > 0  # of another event: never listed
    auth = headers(apps, "volunteer:read")
    volunteers = volunteer_user_ids(engine)
    assert len(volunteers) == 230
    for body in ({"limit": 7}, {"limit": 100}, {}):
        assert walked(client, VOLUNTEERS, auth, body) == volunteers, body


def test_an_exact_last_page_ends_the_walk(client: TestClient, apps: Apps, engine: Engine) -> None:
    import_rich(engine)  # four users, three volunteers
    auth = headers(apps, "user:read volunteer:read")
    for path, count in ((USERS, 4), (VOLUNTEERS, 3)):
        first = client.post(path, json={"limit": count - 1}, headers=auth).json()
        assert first["hasMore"] is True
        assert isinstance(first["nextPage"], str)
        whole = client.post(path, json={"limit": count}, headers=auth).json()
        assert (len(whole["data"]), whole["nextPage"], whole["hasMore"]) == (count, None, False)
        one = client.post(path, json={"limit": 1}, headers=auth).json()
        assert len(one["data"]) == 1
        assert one["hasMore"] is True


# --- the first page, however it is asked for -----------------------------------------------


def test_every_way_of_asking_for_the_first_page_gives_the_first_100(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    load_small_demo(engine, users=130, volunteers=110)
    auth = headers(apps, "user:read volunteer:read")
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for path in SEARCHES:
        first = client.post(path, json={"limit": 100}, headers=auth).json()
        assert len(first["data"]) == 100
        assert first["hasMore"] is True
        asked: dict[str, Any] = {
            "json {}": {"json": {}},
            "no body": {},
            "nextPage null": {"json": {"nextPage": None}},
            "{} without Content-Type": {"content": b"{}"},
            "{} as curl -d sends it": {"content": b"{}", "headers": form},
            "blank body": {"content": b" \r\n", "headers": form},
        }
        for way, request in asked.items():
            request_headers = {**auth, **request.pop("headers", {})}
            response = client.post(path, headers=request_headers, **request)
            assert response.status_code == 200, (path, way, response.text)
            if way in ("no body", "{} without Content-Type"):
                assert "content-type" not in response.request.headers
            page = response.json()
            assert page == first, (path, way)
        response = client.post(path, content=b'{"limit": 5}', headers={**auth, **form})
        assert response.json()["data"] == first["data"][:5], path


# --- records written while a client pages --------------------------------------------------


def test_a_record_added_while_paging_is_seen_once_at_the_end(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    auth = headers(apps, "user:read volunteer:read")
    users = client.post(USERS, json={"limit": 2}, headers=auth).json()
    volunteers = client.post(VOLUNTEERS, json={"limit": 2}, headers=auth).json()
    import_(
        engine,
        {
            "users": [{"username": "newt", "email": "newt@example.org", "firstName": "Newt",
                       "lastName": "Salamander"}],
            "volunteers": [{"user": "otter", "contactMethods": [], "departments": []}],
        },
    )  # fmt: skip
    newt = str(max(int(i) for i in user_ids(engine)))
    rest = walk(client, USERS, auth, {"limit": 2, "nextPage": users["nextPage"]})
    seen = [u["id"] for u in users["data"]] + [u["id"] for p in rest for u in p["data"]]
    assert seen == [str(imported.users[n]) for n in ("fox", "Zoë", "miyazaki", "otter")] + [newt]
    rest = walk(client, VOLUNTEERS, auth, {"limit": 2, "nextPage": volunteers["nextPage"]})
    seen = [identity(VOLUNTEERS, v) for v in volunteers["data"]] + [
        identity(VOLUNTEERS, v) for p in rest for v in p["data"]
    ]
    assert seen == [str(imported.users[n]) for n in ("fox", "Zoë", "miyazaki", "otter")]


# --- cursors that are not ours to accept ---------------------------------------------------


BASE64 = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"


def altered(cursor: str) -> Iterator[str]:
    """The cursor flipped at a few places (payload and signature), truncated, extended."""
    for position in (0, len(cursor) // 3, len(cursor) // 2, len(cursor) - 2, len(cursor) - 1):
        character = cursor[position]
        # Flip a base64 digit's high bit: its low bits may be padding the decoder ignores.
        flipped = BASE64[BASE64.index(character) ^ 32] if character in BASE64 else "A"
        yield cursor[:position] + flipped + cursor[position + 1 :]
    yield cursor[:-1]
    yield cursor[: len(cursor) // 2]
    yield cursor.partition(".")[0]
    yield cursor + "A"
    yield cursor + "." + cursor.rpartition(".")[2]
    # Characters a base64 decoder skips, and others no cursor holds, inside the genuine one.
    yield f"{cursor[:4]}*{cursor[4:]}"
    yield f"{cursor[:4]}\n{cursor[4:]}"
    yield f"{cursor[:4]}é{cursor[4:]}"


def test_an_altered_or_foreign_cursor_is_refused(
    client: TestClient, apps: Apps, rich: None
) -> None:
    auth = headers(apps, "user:read volunteer:read")
    cursors = {
        path: client.post(path, json={"limit": 1}, headers=auth).json()["nextPage"]
        for path in SEARCHES
    }
    roles = client.get("/api/v0/roles", params={"limit": 1}, headers=auth).json()["nextPage"]
    for path in SEARCHES:
        cursor = cursors[path]
        others = [c for p, c in cursors.items() if p != path] + [roles]
        garbage = ["garbage", "a.b", ".", "x" * 500, "W10.AAAA", "null", "0", "٣"]
        for bad in [*altered(cursor), *others, *garbage]:
            assert bad != cursor
            response = client.post(path, json={"nextPage": bad}, headers=auth)
            assert list(validation_fields(response)) == ["nextPage"], (path, bad)
        for not_a_string in [5, True, [cursor], {"cursor": cursor}]:
            response = client.post(path, json={"nextPage": not_a_string}, headers=auth)
            assert list(validation_fields(response)) == ["nextPage"], (path, not_a_string)
        # The genuine cursor still works, after all that.
        response = client.post(path, json={"limit": 1, "nextPage": cursor}, headers=auth)
        assert response.status_code == 200


def test_a_user_cursor_is_bound_to_its_filter(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    roles = import_rich(engine).roles
    more_holders = [{"username": u, "roles": ["Dealer", "Staff"]} for u in ("Zoë", "miyazaki")]
    import_(engine, {"users": more_holders})
    auth = headers(apps, "user:read")
    staff, dealer = {"roleId": roles["Staff"]}, {"roleId": roles["Dealer"]}

    def cursor(filter: dict[str, Any] | None) -> str:
        body = {"limit": 1, **({"filter": filter} if filter is not None else {})}
        page = client.post(USERS, json=body, headers=auth).json()
        assert page["hasMore"] is True, filter
        next_page: str = page["nextPage"]
        return next_page

    unfiltered, of_staff, of_dealers = cursor(None), cursor(staff), cursor(dealer)
    for issued, used in [
        (unfiltered, dealer),
        (unfiltered, {"email": "fox@example.org"}),
        (unfiltered, {"username": "Zoë"}),
        (of_staff, None),
        (of_staff, {}),
        (of_staff, dealer),
        (of_staff, {**staff, "username": "Zoë"}),
        (of_dealers, staff),
    ]:
        body = {"nextPage": issued, **({"filter": used} if used is not None else {})}
        fields = validation_fields(client.post(USERS, json=body, headers=auth))
        assert list(fields) == ["nextPage"], (used, fields)
    # The same filter, however written, continues the same list; an empty filter is none.
    for issued, used, then in [
        (unfiltered, {}, "Zoë"),
        (unfiltered, {"email": None}, "Zoë"),
        (of_staff, {**staff, "username": None}, "Zoë"),
        (of_dealers, dealer, "miyazaki"),
    ]:
        body = {"limit": 1, "nextPage": issued, "filter": used}
        response = client.post(USERS, json=body, headers=auth)
        assert response.status_code == 200, (used, response.text)
        assert [u["username"] for u in response.json()["data"]] == [then], used


def test_a_cursor_signed_with_another_secret_key_is_refused(
    client: TestClient, apps: Apps, rich: None, database_url: str
) -> None:
    auth = headers(apps, "user:read volunteer:read")
    ours = {
        path: client.post(path, json={"limit": 1}, headers=auth).json()["nextPage"]
        for path in SEARCHES
    }
    other_key = "another instance's secret key, not this one's"
    other_app = create_app(load_settings(database_url=database_url, secret_key=other_key))
    with TestClient(other_app, base_url="https://testserver") as other:
        for path in SEARCHES:
            theirs = other.post(path, json={"limit": 1}, headers=auth).json()["nextPage"]
            assert theirs != ours[path]
            ok = other.post(path, json={"limit": 1, "nextPage": theirs}, headers=auth)
            assert ok.status_code == 200, ok.text
            response = other.post(path, json={"nextPage": ours[path]}, headers=auth)
            assert list(validation_fields(response)) == ["nextPage"], path
            response = client.post(path, json={"nextPage": theirs}, headers=auth)
            assert list(validation_fields(response)) == ["nextPage"], path


# --- limits and bodies ---------------------------------------------------------------------


def test_a_limit_outside_1_to_100_or_not_an_integer_is_refused_never_clamped(
    client: TestClient, apps: Apps, rich: None
) -> None:
    auth = headers(apps, "user:read volunteer:read")
    # null is refused too: `limit` is optional, not nullable (api.md 4.3: "number").
    for path in SEARCHES:
        for limit in [0, 101, -1, 1000, 2**63, 1.5, 10.0, "10", True, False, None, [10], {}]:
            response = client.post(path, json={"limit": limit}, headers=auth)
            assert list(validation_fields(response)) == ["limit"], (path, limit)
        for limit in (1, 100):
            response = client.post(path, json={"limit": limit}, headers=auth)
            assert response.status_code == 200, (path, limit)


def test_a_body_that_is_not_a_search_is_refused_naming_what_is_wrong(
    client: TestClient, apps: Apps, rich: None
) -> None:
    auth = headers(apps, "user:read volunteer:read")
    for path in SEARCHES:
        for body, field in [
            ({"page": 2}, "page"),
            ({"limit": 5, "offset": 5}, "offset"),
            ({"next_page": None}, "next_page"),
            ({"NextPage": None}, "NextPage"),
        ]:
            response = client.post(path, json=body, headers=auth)
            assert list(validation_fields(response)) == [field], (path, body)
        not_json = [b"limit=5", b"{", b'{"limit": 5', b"\xff\xfe{}"]
        not_an_object = [b"[]", b"[{}]", b'"{}"', b"5", b"null", b"true"]
        for raw in not_json + not_an_object:
            response = client.post(path, content=raw, headers=auth)
            assert list(validation_fields(response)) == ["body"], (path, raw)
    response = client.post(VOLUNTEERS, json={"filter": {}}, headers=auth)
    assert list(validation_fields(response)) == ["filter"]  # volunteer search has no filter


# --- cost of a page ------------------------------------------------------------------------


def page_statements(
    client: TestClient, path: str, auth: dict[str, str], body: dict[str, Any]
) -> list[tuple[str, Any]]:
    with statements(app_engine(client)) as sent:
        response = client.post(path, json=body, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["data"]
    return sent


def cursor_after(
    client: TestClient, path: str, auth: dict[str, str], body: dict[str, Any], pages: int
) -> str:
    """The cursor of page `pages + 1`."""
    cursor = ""
    for _ in range(pages):
        request = {**body, "nextPage": cursor} if cursor else body
        cursor = client.post(path, json=request, headers=auth).json()["nextPage"]
        assert isinstance(cursor, str)
    return cursor


def sqlite_plan(engine: Engine, statement: tuple[str, Any]) -> str:
    sql, parameters = statement
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
        return "\n".join(str(row[-1]) for row in rows)


def test_a_page_costs_the_same_statements_whatever_its_size_or_depth(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    load_small_demo(engine, users=430, volunteers=230)
    auth = headers(apps, "user:read volunteer:read")
    with engine.connect() as connection:
        attendees = len(
            connection.scalars(select(UserRole.user_id).where(UserRole.role_id == 1)).all()
        )
    assert attendees > 130
    for path, body, size in [
        (VOLUNTEERS, {}, 230),
        (USERS, {}, 430),
        (USERS, {"filter": {"roleId": 1}}, attendees),
    ]:
        small, full = {**body, "limit": 5}, {**body, "limit": 100}
        last = (size - 1) // 100  # full pages before the last, which is not empty
        counted = {
            "5 first": page_statements(client, path, auth, small),
            "100 first": page_statements(client, path, auth, full),
            "5 at page 26": page_statements(
                client,
                path,
                auth,
                {**small, "nextPage": cursor_after(client, path, auth, small, 25)},
            ),
            f"100 at page {last + 1}": page_statements(
                client,
                path,
                auth,
                {**full, "nextPage": cursor_after(client, path, auth, full, last)},
            ),
        }
        counts = {name: len(sent) for name, sent in counted.items()}
        assert len(set(counts.values())) == 1, (path, body, counts)
        if engine.dialect.name == "sqlite":
            # Keyset, not OFFSET: the deep page's query seeks to its place in an index, and
            # sorts nothing (a sort would read every row after the cursor, not one page).
            deep = counted["5 at page 26"]
            [main] = [s for s in deep if "ORDER BY" in s[0] and "LIMIT" in s[0]]
            plan = sqlite_plan(engine, main)
            assert ">?" in plan, plan
            assert "TEMP B-TREE" not in plan, plan
            # No table scanned: only the page's own rows and their join (Page.joined).
            scans = {line for line in plan.splitlines() if line.startswith("SCAN")}
            assert scans <= {"SCAN page", "SCAN joined"}, plan
