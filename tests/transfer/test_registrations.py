"""registrations.md's sections of the import document: products, flags, registration options
and registrations, checked field by field, written all or nothing, matched on re-import, held
to capacity and to one live registration per user, and exported back the same."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from regdesk.audit.models import AuditEvent
from regdesk.db import read_session, write_session
from regdesk.errors import Invalid
from regdesk.registrations.models import Order, Product, Registration
from regdesk.registrations.service import live_registration, register
from regdesk.transfer.exporter import export_document
from regdesk.transfer.importer import ImportRejected, ImportResult, import_document
from regdesk.users.models import User
from tests.conftest import BACKENDS, Cli
from tests.transfer.support import ACTOR, backend_of, empty_database, table_rows


def user(name: str) -> dict[str, Any]:
    return {
        "username": name,
        "email": f"{name}@example.org",
        "firstName": name.title(),
        "lastName": "Example",
    }


_SALES: dict[str, Any] = {
    "users": [user("fox"), user("otter"), user("badger"), user("wolf"), user("hare")],
    "products": [
        {"name": "sponsor", "displayName": "Sponsor", "price": 12000, "capacity": 3},
        {"name": "attendee", "price": 6500, "description": "Four days of the convention."},
        {
            "name": "staff",
            "price": 0,
            "public": False,
            "opensAt": "2026-01-01T00:00:00.000Z",
            "closesAt": "2026-07-01T00:00:00.000Z",
        },
    ],
    "registrationFlags": [{"shortName": "fursuits"}, {"shortName": "accessibility"}],
    "registrationOptions": [
        {"name": "T-shirt size", "type": "select", "choices": ["S", "M", "L"]},
        {"name": "Dietary needs", "type": "text"},
    ],
    "registrations": [
        {
            "user": "fox",
            "product": "sponsor",
            "orderId": "10482",
            "status": "paid",
            "paymentMethod": "external",
            "paymentReference": "SHOP-10482",
            "badgeName": "Fae  the Fox",
            "options": [{"name": "T-shirt size", "type": "select", "value": "L"}],
            "flags": ["fursuits"],
        },
        {"user": "OTTER@example.org", "product": "attendee"},  # an e-mail; a number made
        {"user": "badger", "product": "sponsor", "orderId": "20001", "status": "cancelled"},
        {
            "user": "badger",
            "product": "attendee",
            "orderId": 20002,
            "status": "paid",
            "paymentMethod": "transfer",
            "paidAt": "2026-03-01T10:00:00.000Z",
            "ticketCode": "BADGER0001",
            "checkedInAt": "2026-07-02T09:00:00.000Z",
            "checkedInBy": "fox",
            "options": [{"name": "Arrival", "type": "text", "value": "Friday"}],
            "createdAt": "2026-02-01T12:00:00.000Z",
            "updatedAt": "2026-03-01T10:00:00.000Z",
        },
    ],
}


def sales() -> dict[str, Any]:
    return copy.deepcopy(_SALES)


def import_(engine: Engine, document: dict[str, Any], currency: str = "EUR") -> ImportResult:
    return import_document(engine, document, actor=ACTOR, phone_region="US", currency=currency)


def rejected(engine: Engine, document: dict[str, Any]) -> list[tuple[str, str]]:
    """The errors of an import that must fail, after checking that it wrote nothing."""
    rows = table_rows(engine)
    with pytest.raises(ImportRejected) as caught:
        import_(engine, document)
    assert table_rows(engine) == rows
    return caught.value.errors


def count(engine: Engine, model: Any) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


def by_order(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["orderId"]: row for row in document["registrations"]}


# --- what an import makes ------------------------------------------------------------------------


def test_an_import_makes_products_flags_options_and_registrations(engine: Engine) -> None:
    result = import_(engine, sales())
    exported = export_document(engine)

    assert [p["name"] for p in exported["products"]] == ["sponsor", "attendee", "staff"]
    assert exported["products"][2]["public"] is False
    assert exported["products"][2]["closesAt"] == "2026-07-01T00:00:00.000Z"
    assert [f["shortName"] for f in exported["registrationFlags"]] == ["fursuits", "accessibility"]
    assert [o["name"] for o in exported["registrationOptions"]] == [
        "T-shirt size",
        "Dietary needs",
        "Arrival",  # answered without a declaration: added, as volunteers' options are
    ]
    rows = by_order(exported)
    made = next(number for number in rows if number not in ("10482", "20001", "20002"))
    assert len(made) == 5
    assert made.isdigit()
    assert not made.startswith("0")
    fox = rows["10482"]
    assert (fox["status"], fox["paymentMethod"]) == ("paid", "external")
    assert fox["paidAt"] is not None  # paid now, when the document does not say when
    assert fox["badgeName"] == "Fae the Fox"  # stored as the badge rule keeps it
    assert fox["flags"] == ["fursuits"]
    assert fox["options"] == [{"name": "T-shirt size", "type": "select", "value": "L"}]
    assert (rows[made]["user"], rows[made]["status"], rows[made]["amount"]) == (
        "otter",
        "unpaid",
        6500,
    )
    assert rows["20002"]["checkedInBy"] == "fox"
    assert rows["20002"]["ticketCode"] == "BADGER0001"
    assert rows["20002"]["createdAt"] == "2026-02-01T12:00:00.000Z"

    with read_session(engine) as session:
        assert set(session.scalars(select(Order.currency))) == {"EUR"}  # the instance's
        badger = session.scalars(select(User).where(User.username == "badger")).one()
        held = live_registration(session, badger.id)
        assert held is not None
        assert held.order.number == "20002"
        ended = session.scalars(select(Registration).where(Registration.ended_at.is_not(None)))
        assert [r.order_id for r in ended] == [
            session.scalars(select(Order.id).where(Order.number == "20001")).one()
        ]
    assert result.registrations == {
        number: row["id"] for number, row in rows.items()
    }  # every row of the document, the made number too
    assert result.products == {p["name"]: p["id"] for p in exported["products"]}


def test_import_json_prints_products_and_registrations(
    cli: Cli, tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REGDESK_CURRENCY", "JPY")
    path = tmp_path / "sales.json"
    path.write_text(json.dumps(sales()), encoding="utf-8")
    printed = json.loads(cli.ok("import", str(path), "--json").stdout)
    assert printed["products"] == {"sponsor": "1", "attendee": "2", "staff": "3"}
    assert printed["registrations"]["10482"] == 1
    assert sorted(printed["registrations"].values()) == [1, 2, 3, 4]
    with read_session(engine) as session:
        assert set(session.scalars(select(Order.currency))) == {"JPY"}  # REGDESK_CURRENCY


def test_the_export_says_what_currency_its_amounts_are_in_and_the_import_holds_to_it(
    engine: Engine,
) -> None:
    """registrations.md: amounts shown with the currency. An export's rows carry their orders'
    currency; importing them back changes nothing; a row in another currency is refused,
    since an amount is never converted."""
    import_(engine, sales())  # into an instance whose currency is EUR
    exported = export_document(engine)
    assert {row["currency"] for row in exported["registrations"]} == {"EUR"}
    rows = table_rows(engine)
    import_(engine, exported)
    after = table_rows(engine)
    assert after.pop("audit_events") != rows.pop("audit_events")
    assert after == rows

    errors = rejected(
        engine,
        {
            "registrations": [
                {"orderId": "10482", "currency": "USD"},
                {"user": "wolf", "product": "attendee", "currency": "JPY"},
            ]
        },
    )
    assert errors == [
        (
            "registrations[0].currency",
            "is 'USD', but the order's currency is 'EUR'; amounts are never converted",
        ),
        (
            "registrations[1].currency",
            "is 'JPY', but this instance's (REGDESK_CURRENCY) currency is 'EUR'; amounts are"
            " never converted",
        ),
    ]


def test_a_reimport_matches_and_updates_never_duplicates(engine: Engine) -> None:
    import_(engine, sales())
    rows, exported = table_rows(engine), export_document(engine)
    again = import_(engine, sales())
    assert export_document(engine) == exported
    after = table_rows(engine)
    assert after.pop("audit_events") != rows.pop("audit_events")
    assert after == rows  # nothing written but the audit event, updatedAt included
    assert again.tallies["registrations"].unchanged == 4
    assert again.tallies["products"].unchanged == 3

    changed = {
        "products": [{"name": "sponsor", "price": 13000}],
        "registrations": [
            # otter's row without an orderId: otter's live registration, now paid at the desk
            {"user": "otter", "status": "paid", "paymentMethod": "desk"},
            {"orderId": "10482", "flags": [], "user": "FOX@example.org"},
        ],
    }
    result = import_(engine, changed)
    assert result.tallies["registrations"].updated == 2
    assert count(engine, Registration) == count(engine, Order) == 4
    now = by_order(export_document(engine))
    otter = next(row for row in now.values() if row["user"] == "otter")
    assert (otter["status"], otter["paymentMethod"], otter["amount"]) == ("paid", "desk", 6500)
    assert now["10482"]["flags"] == []
    assert now["10482"]["amount"] == 12000  # an order keeps the price it was sold at
    assert now["10482"]["updatedAt"] > exported["registrations"][0]["updatedAt"]


def test_every_order_and_registration_an_import_makes_or_changes_is_audited(
    engine: Engine,
) -> None:
    """registrations.md: every change of an order or registration is an audit event (who,
    what, before and after), an import's too; besides, one `data.imported` with the counts."""
    made = import_(engine, sales())
    events = audit_events(engine)
    imported = [event for event in events if event.action == "data.imported"]
    assert len(imported) == 1
    assert imported[0].details["products"] == {"created": 3, "updated": 0, "unchanged": 0}
    assert imported[0].details["registrations"] == {"created": 4, "updated": 0, "unchanged": 0}
    numbers = set(made.registrations)
    created = {(e.action, e.target_id) for e in events if e.action.endswith(".created")}
    assert created == {("order.created", n) for n in numbers} | {
        ("registration.created", str(made.registrations[n])) for n in numbers
    }
    assert all(event.actor == ACTOR.label for event in events)
    fox = next(e for e in events if (e.action, e.target_id) == ("order.created", "10482"))
    assert fox.details == {
        "user_id": user_id(engine, "fox"), "product": "sponsor", "amount": 12000, "status": "paid"
    }  # fmt: skip

    import_(engine, sales())  # the same again: nothing changes, nothing but data.imported
    assert [e.action for e in audit_events(engine)[len(events) :]] == ["data.imported"]

    seen = len(audit_events(engine))
    changed = {
        "registrations": [
            {"orderId": "10482", "status": "refunded", "flags": [], "badgeName": "Fae"},
            {"orderId": "20002", "ticketCode": "BADGER0002"},
        ]
    }
    import_(engine, changed)
    later = {(e.action, e.target_id): e.details for e in audit_events(engine)[seen:]}
    fox_id, badger_id = str(made.registrations["10482"]), str(made.registrations["20002"])
    assert later[("order.updated", "10482")] == {
        "fields": ["status"], "before": {"status": "paid"}, "after": {"status": "refunded"}
    }  # fmt: skip
    fox_changed = later[("registration.updated", fox_id)]
    assert fox_changed["fields"] == ["badge_name", "ended_at", "flags"]
    assert fox_changed["before"]["badge_name"] == "Fae the Fox"
    assert fox_changed["after"]["badge_name"] == "Fae"
    assert fox_changed["before"]["ended_at"] is None
    assert fox_changed["after"]["ended_at"]
    # A ticket code gets a badge at the desk: the event names the change, never the codes.
    assert later[("registration.updated", badger_id)] == {
        "fields": ["ticket_code"], "before": {}, "after": {}
    }  # fmt: skip
    assert set(later) == {
        ("data.imported", None),
        ("order.updated", "10482"),
        ("registration.updated", fox_id),
        ("registration.updated", badger_id),
    }


def audit_events(engine: Engine) -> list[AuditEvent]:
    with read_session(engine) as session:
        return list(session.scalars(select(AuditEvent).order_by(AuditEvent.id)))


def user_id(engine: Engine, username: str) -> int:
    with read_session(engine) as session:
        return session.scalars(select(User.id).where(User.username == username)).one()


# --- every field checked, by its position ---------------------------------------------------------


@pytest.fixture(
    scope="module",
    params=BACKENDS,
)
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    with empty_database(request.param, tmp_path_factory.mktemp("seeded")) as engine:
        import_(engine, sales())
        yield engine


def put(section: str, index: int, key: str, value: Any) -> dict[str, Any]:
    document = sales()
    document[section][index][key] = value
    return document


def drop(section: str, index: int, key: str) -> dict[str, Any]:
    document = sales()
    del document[section][index][key]
    return document


def added(section: str, record: Any) -> dict[str, Any]:
    document = sales()
    document[section].append(record)
    return document


NEW = {"user": "wolf", "product": "attendee"}
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("price with a fraction", put("products", 0, "price", 120.5), "products[0].price", "integer"),
    ("price as text", put("products", 0, "price", "120"), "products[0].price", "a string"),
    ("negative price", put("products", 0, "price", -1), "products[0].price", "from 0"),
    ("capacity below 0", put("products", 0, "capacity", -3), "products[0].capacity", "from 0"),
    ("new product, no price", added("products", {"name": "day"}), "products[3].price", "required"),
    ("product, no name", drop("products", 1, "name"), "products[1].name", "required"),
    ("product twice", added("products", {"name": "staff"}), "products[3].name", "also in"),
    (
        "closes before it opens",
        put("products", 2, "closesAt", "2025-12-31T00:00:00.000Z"),
        "products[2].closesAt",
        "not after opensAt",
    ),
    (
        "product id taken",
        added("products", {"id": 2, "name": "day", "price": 1}),
        "products[3].id",
        "taken by product 'attendee'",
    ),
    ("public not a boolean", put("products", 0, "public", "yes"), "products[0].public", "true"),
    ("unknown product field", put("products", 0, "cost", 1), "products[0].cost", "unknown"),
    (
        "flag without a name",
        put("registrationFlags", 0, "shortName", " "),
        "registrationFlags[0].shortName",
        "empty",
    ),
    (
        "flag twice",
        added("registrationFlags", {"shortName": "fursuits"}),
        "registrationFlags[2].shortName",
        "also in",
    ),
    (
        "option of no type",
        put("registrationOptions", 1, "type", "date"),
        "registrationOptions[1].type",
        "not one of",
    ),
    (
        "option changing type",
        put("registrationOptions", 0, "type", "text"),
        "registrationOptions[0].type",
        "registration option 'T-shirt size' is 'select'",
    ),
    (
        "choices of a text option",
        put("registrationOptions", 1, "choices", ["a"]),
        "registrationOptions[1].choices",
        "only select and multi",
    ),
    (
        "no such product",
        put("registrations", 1, "product", "x"),
        "registrations[1].product",
        "no product is named 'x'",
    ),
    (
        "no such user",
        put("registrations", 1, "user", "nobody@example.org"),
        "registrations[1].user",
        "no user has the username or e-mail address",
    ),
    (
        "new, without a user",
        added("registrations", {"product": "attendee"}),
        "registrations[4].user",
        "required",
    ),
    (
        "new, without a product",
        added("registrations", {"user": "wolf"}),
        "registrations[4].product",
        "required",
    ),
    (
        "order id with a leading zero",
        put("registrations", 0, "orderId", "010482"),
        "registrations[0].orderId",
        "leading zero",
    ),
    (
        "order id not digits",
        put("registrations", 0, "orderId", "10a"),
        "registrations[0].orderId",
        "decimal digits",
    ),
    (
        "order id twice",
        put("registrations", 2, "orderId", "10482"),
        "registrations[2].orderId",
        "also in registrations[0]",
    ),
    (
        "bad status",
        put("registrations", 1, "status", "pending"),
        "registrations[1].status",
        "'pending' is not one of unpaid, paid, cancelled, refunded",
    ),
    (
        "bad payment method",
        put("registrations", 0, "paymentMethod", "cash"),
        "registrations[0].paymentMethod",
        "not one of desk, transfer, external, comp",
    ),
    (
        "paid, no method",
        put("registrations", 3, "paymentMethod", None),
        "registrations[3].paymentMethod",
        "required for a paid order",
    ),
    (
        "unpaid with a method",
        put("registrations", 1, "paymentMethod", "desk"),
        "registrations[1].paymentMethod",
        "only for a paid or refunded order",
    ),
    (
        "cancelled with a paidAt",
        put("registrations", 2, "paidAt", "2026-01-01T00:00:00Z"),
        "registrations[2].paidAt",
        "only for a paid or refunded order",
    ),
    (
        "amount with a fraction",
        put("registrations", 1, "amount", 65.0),
        "registrations[1].amount",
        "integer",
    ),
    (
        "badge name with a bell",
        put("registrations", 0, "badgeName", "Fae\x07"),
        "registrations[0].badgeName",
        "control characters",
    ),
    (
        "badge name too long",
        put("registrations", 0, "badgeName", "x" * 101),
        "registrations[0].badgeName",
        "longer than 100",
    ),
    (
        "answer not a choice",
        put(
            "registrations",
            0,
            "options",
            [{"name": "T-shirt size", "type": "select", "value": "XXL"}],
        ),
        "registrations[0].options[0].value",
        "'XXL' is not one of the choices",
    ),
    (
        "answer of another type",
        put(
            "registrations", 0, "options", [{"name": "Dietary needs", "type": "number", "value": 1}]
        ),
        "registrations[0].options[0].type",
        "registration option 'Dietary needs' is 'text'",
    ),
    (
        "no such flag",
        put("registrations", 0, "flags", ["vip"]),
        "registrations[0].flags[0]",
        "no flag is named 'vip'",
    ),
    (
        "flag twice",
        put("registrations", 0, "flags", ["fursuits", "fursuits"]),
        "registrations[0].flags[1]",
        "listed twice",
    ),
    (
        "ticket code with a dash",
        put("registrations", 0, "ticketCode", "AB-CD"),
        "registrations[0].ticketCode",
        "letters and digits",
    ),
    (
        "ticket code twice",
        put("registrations", 0, "ticketCode", "BADGER0001"),
        "registrations[3].ticketCode",
        "also in registrations[0]",
    ),
    (
        "checked in by, not when",
        put("registrations", 0, "checkedInBy", "fox"),
        "registrations[0].checkedInBy",
        "only for a registration with checkedInAt",
    ),
    (
        "bad createdAt",
        put("registrations", 0, "createdAt", "yesterday"),
        "registrations[0].createdAt",
        "timestamp",
    ),
    (
        "registration id taken",
        added("registrations", {**NEW, "id": 1}),
        "registrations[4].id",
        "taken by registration '10482'",
    ),
    (
        "unknown registration field",
        put("registrations", 0, "price", 1),
        "registrations[0].price",
        "unknown field",
    ),
    (
        "an order moving to another user",
        put("registrations", 0, "user", "wolf"),
        "registrations[0].user",
        "order 10482 belongs to 'fox'",
    ),
    (
        "registrations not an array",
        {"registrations": {"user": "fox"}},
        "registrations",
        "must be an array",
    ),
]


@pytest.mark.parametrize(
    ("document", "position", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_field_is_refused_by_its_position(
    seeded: Engine, document: dict[str, Any], position: str, message: str
) -> None:
    errors = rejected(seeded, document)
    assert any(p == position and message in m for p, m in errors), errors


def test_one_bad_row_and_nothing_of_the_document_is_written(engine: Engine) -> None:
    document = sales()
    document["registrations"][3]["flags"] = ["nonesuch"]
    errors = rejected(engine, document)
    assert errors == [("registrations[3].flags[0]", "no flag is named 'nonesuch'")]
    assert count(engine, User) == count(engine, Product) == count(engine, Order) == 0


# --- capacity and one live registration, for imports too -----------------------------------------


def test_an_import_that_would_oversell_a_product_is_refused_naming_the_row(
    engine: Engine,
) -> None:
    import_(engine, sales())  # sponsor: 3 places, fox's paid order holds one
    with write_session(engine) as session:  # and a sale on the page another
        wolf = session.scalars(select(User.id).where(User.username == "wolf")).one()
        sponsor = session.scalars(select(Product.id).where(Product.name == "sponsor")).one()
        register(session, ACTOR, user_id=wolf, product_id=sponsor, currency="EUR")
    document = {
        "users": [user("lynx"), user("stoat")],
        "registrations": [
            {"user": "hare", "product": "sponsor"},  # the last place
            {"user": "lynx", "product": "sponsor", "status": "cancelled"},  # holds none
            {"user": "stoat", "product": "sponsor"},  # one too many
        ],
    }
    errors = rejected(engine, document)
    assert errors == [("registrations[2].product", "'sponsor' is sold out: 3 places, 3 taken")]

    document["registrations"].append({"orderId": "10482", "status": "refunded"})  # frees one
    import_(engine, document)
    with read_session(engine) as session:
        live = session.scalar(
            select(func.count())
            .select_from(Order)
            .join(Product, Product.id == Order.product_id)
            .where(Product.name == "sponsor", Order.status.in_(["paid", "unpaid"]))
        )
    assert live == 3


def test_capacity_counts_the_documents_own_rows(engine: Engine) -> None:
    document = {
        "users": [user("a"), user("b"), user("c")],
        "products": [{"name": "vip", "price": 1, "capacity": 2}],
        "registrations": [{"user": name, "product": "vip"} for name in ("a", "b", "c")],
    }
    errors = rejected(engine, document)
    assert errors == [("registrations[2].product", "'vip' is sold out: 2 places, 2 taken")]
    document["products"][0]["capacity"] = 3
    import_(engine, document)
    assert count(engine, Order) == 3


def test_an_import_never_gives_a_user_two_live_registrations(engine: Engine) -> None:
    import_(engine, sales())
    errors = rejected(
        engine, {"registrations": [{"user": "fox", "product": "attendee", "orderId": "30001"}]}
    )
    assert errors == [
        ("registrations[0].user", "'fox' already has a live registration (order 10482)")
    ]

    two = {
        "registrations": [
            {"user": "wolf", "product": "attendee", "orderId": "30002"},
            {"user": "wolf", "product": "sponsor", "orderId": "30003", "status": "unpaid"},
        ]
    }
    errors = rejected(engine, two)
    assert errors == [
        ("registrations[1].user", "'wolf' has a live registration in registrations[0] too")
    ]

    # Ended ones do not count: fox's refunded, then registered again, in one document.
    import_(
        engine,
        {
            "registrations": [
                {"orderId": "10482", "status": "refunded"},
                {"user": "fox", "product": "attendee", "orderId": "30001"},
            ]
        },
    )
    with read_session(engine) as session:
        fox = session.scalars(select(User.id).where(User.username == "fox")).one()
        held = live_registration(session, fox)
    assert held is not None
    assert held.order.number == "30001"


@pytest.mark.parametrize("rule", ["one live registration", "capacity"])
def test_an_import_racing_a_sale_never_breaks_the_rules(engine: Engine, rule: str) -> None:
    """The import and the attendee's page at the same moment: either may win, never both.
    `one live registration`: both register fox (two products); `capacity`: the import takes
    the sponsor product's last place for otter as the page sells it to hare."""
    import_(
        engine,
        {
            "users": [user("fox"), user("otter"), user("hare")],
            "products": [
                {"name": "sponsor", "price": 12000, "capacity": 1},
                {"name": "attendee", "price": 6500},
            ],
        },
    )
    with read_session(engine) as session:
        ids = dict(session.execute(select(User.username, User.id)).all())
        products = dict(session.execute(select(Product.name, Product.id)).all())
    importing, buying = ("fox", "fox") if rule == "one live registration" else ("otter", "hare")
    document = {"registrations": [{"user": importing, "product": "sponsor", "orderId": "40001"}]}
    product = "attendee" if rule == "one live registration" else "sponsor"
    barrier = threading.Barrier(2)
    outcomes: dict[str, BaseException | None] = {}

    def run(name: str, work: Callable[[], object]) -> None:
        barrier.wait()
        try:
            work()
            outcomes[name] = None
        except BaseException as error:
            outcomes[name] = error

    def sell() -> None:
        with write_session(engine) as session:
            register(
                session,
                ACTOR,
                user_id=ids[buying],
                product_id=products[product],
                currency="EUR",
            )

    threads = [
        threading.Thread(target=run, args=("import", lambda: import_(engine, document))),
        threading.Thread(target=run, args=("page", sell)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    refused = [name for name, error in outcomes.items() if error is not None]
    assert len(refused) == 1, outcomes  # one wins, the other is told no
    error = outcomes[refused[0]]
    assert isinstance(error, ImportRejected | Invalid), error
    with read_session(engine) as session:
        if rule == "capacity":
            held = session.scalar(
                select(func.count()).select_from(Order).where(Order.product_id == products[product])
            )
            assert held == 1
        else:
            live = session.scalar(
                select(func.count())
                .select_from(Registration)
                .where(Registration.user_id == ids["fox"], Registration.ended_at.is_(None))
            )
            assert live == 1
        assert session.scalar(select(func.count()).select_from(Order)) == 1  # none orphaned


def test_a_registration_made_on_the_page_is_matched_by_its_user(engine: Engine) -> None:
    import_(engine, {"users": [user("fox")], "products": [{"name": "attendee", "price": 1}]})
    with write_session(engine) as session:
        fox = session.scalars(select(User.id).where(User.username == "fox")).one()
        attendee = session.scalars(select(Product.id)).one()
        number = register(
            session, ACTOR, user_id=fox, product_id=attendee, currency="EUR"
        ).order.number
    result = import_(engine, {"registrations": [{"user": "fox", "badgeName": "Fae"}]})
    assert result.registrations == {number: 1}
    assert result.tallies["registrations"].updated == 1
    assert count(engine, Registration) == 1


# --- export ---------------------------------------------------------------------------------------


def test_export_then_import_into_an_empty_database_gives_the_same_document(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    import_(engine, sales())
    import_(
        engine,
        {
            "registrations": [
                {"orderId": "10482", "status": "refunded"},
                {
                    "user": "fox",
                    "product": "staff",
                    "status": "paid",
                    "paymentMethod": "comp",
                    "flags": ["accessibility"],
                },
            ]
        },
    )
    exported = export_document(engine)
    assert len(exported["registrations"]) == 5

    with empty_database(backend_of(database_url), tmp_path) as second:
        result = import_(second, exported)
        assert export_document(second) == exported
        rows = table_rows(second)
        import_(second, exported)  # and again: nothing but the audit event is written
        after = table_rows(second)
        assert after.pop("audit_events") != rows.pop("audit_events")
        assert after == rows
    assert result.registrations == {r["orderId"]: r["id"] for r in exported["registrations"]}
