"""`regdesk demo`'s data (regdesk.demo): realistic, valid, reproducible, and only once."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, delete, func, select, text

from regdesk import demo
from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import make_engine, read_session, write_session
from regdesk.demo import DemoNotEmpty, DemoResult, data, load_demo, people, places, writer
from regdesk.departments.models import Department, DepartmentLead
from regdesk.documents.models import DocumentQueue
from regdesk.events.models import Event, EventOption, OptionType, option_value_error
from regdesk.models import DOCUMENTS, metadata
from regdesk.oauth.models import Application, UserPermission
from regdesk.roles.models import Role, UserRole
from regdesk.security import verify_client_secret, verify_password
from regdesk.users.fields import check_username, normalize_country, normalize_email, normalize_phone
from regdesk.users.models import User
from regdesk.volunteers.models import (
    DepartmentState,
    Volunteer,
    VolunteerContactMethod,
    VolunteerDepartmentState,
    VolunteerOptionValue,
)
from tests.conftest import BACKENDS, scratch_database_url
from tests.documents.support import declared, installed

ACTOR = Actor(label="test:demo")
USERS, VOLUNTEERS = 300, 60
# Random by design (hashes of random passwords, ticket codes): left out when two loads are
# compared.
UNSEEDED_COLUMNS = {("users", "password_hash"), ("registrations", "ticket_code")}
SEEDED_TABLES = writer.TABLES  # every table the seed decides; applications and audit are not


@pytest.fixture
def loaded(engine: Engine) -> DemoResult:
    return load_demo(engine, users=USERS, volunteers=VOLUNTEERS, seed=7, actor=ACTOR)


ReadOnlyDemo = tuple[DemoResult, Engine]


@pytest.fixture(scope="module", params=BACKENDS)
def read_only_demo(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReadOnlyDemo]:
    """One demo, loaded as `loaded` loads it, for the tests that only read it (a demo of 300
    people is most of such a test's time)."""
    folder = tmp_path_factory.mktemp("demo")
    with scratch_database_url(request.param, folder, migrated=True) as url:
        engine = make_engine(url)
        try:
            yield load_demo(engine, users=USERS, volunteers=VOLUNTEERS, seed=7, actor=ACTOR), engine
        finally:
            engine.dispose()


def rows(engine: Engine, model: Any) -> list[Any]:
    with read_session(engine) as session:
        return list(session.scalars(select(model)))


def current_event_id(engine: Engine) -> int:
    with read_session(engine) as session:
        return session.scalars(select(Event.id).where(Event.is_current)).one()


def dump(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """The seeded tables, row by row in key order, without what is random by design."""
    result = {}
    with engine.connect() as connection:
        for name in SEEDED_TABLES:
            table = metadata.tables[name]
            columns = [c for c in table.columns if (name, c.name) not in UNSEEDED_COLUMNS]
            query = select(*columns).order_by(*table.primary_key.columns)
            result[name] = [tuple(row) for row in connection.execute(query)]
    return result


def wipe(engine: Engine) -> None:
    with write_session(engine) as session:
        for table in reversed(metadata.sorted_tables):
            session.execute(delete(table))


# --- reproducible, and only into an empty database -----------------------------------------


def test_the_same_seed_gives_the_same_data_and_another_seed_other_data(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "_today", lambda: dt.date(2026, 6, 15))  # not across midnight
    load_demo(engine, users=USERS, volunteers=VOLUNTEERS, seed=11, actor=ACTOR)
    first = dump(engine)
    wipe(engine)
    load_demo(engine, users=USERS, volunteers=VOLUNTEERS, seed=11, actor=ACTOR)
    assert dump(engine) == first
    wipe(engine)
    load_demo(engine, users=USERS, volunteers=VOLUNTEERS, seed=12, actor=ACTOR)
    other = dump(engine)
    assert other["users"] != first["users"]
    assert other["volunteer_department_states"] != first["volunteer_department_states"]


def test_rows_are_written_a_chunk_at_a_time_with_the_same_result(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory holds a chunk of rows, not the demo: however small the chunks, the rows (and
    the order they were written in, which SQLite's rowids keep) are the same."""
    monkeypatch.setattr(demo, "_today", lambda: dt.date(2026, 6, 15))
    load_demo(engine, users=USERS, volunteers=VOLUNTEERS, seed=11, actor=ACTOR)
    whole = dump(engine)
    wipe(engine)
    written: list[tuple[str, int]] = []

    def bulk_insert(session: Any, table: Any, table_rows: list[dict[str, Any]]) -> None:
        if table_rows:
            written.append((table.name, len(table_rows)))
        real_bulk_insert(session, table, table_rows)

    real_bulk_insert = writer.bulk_insert
    monkeypatch.setattr(writer, "bulk_insert", bulk_insert)
    monkeypatch.setattr(demo, "CHUNK_ROWS", 50)
    monkeypatch.setattr(writer, "LOOKUP_ROWS", 7)
    load_demo(engine, users=USERS, volunteers=VOLUNTEERS, seed=11, actor=ACTOR)
    assert dump(engine) == whole
    assert max(size for _, size in written) <= 50
    assert sum(size for name, size in written if name == "users") == USERS
    assert len([name for name, _ in written if name == "users"]) >= USERS // 50


def test_a_failure_midway_leaves_the_database_empty(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks already written are rolled back with the rest: the demo is one transaction."""
    written: list[str] = []

    def bulk_insert(session: Any, table: Any, table_rows: list[dict[str, Any]]) -> None:
        if table.name == "volunteer_option_values" and table_rows:
            raise RuntimeError("disk full")
        real_bulk_insert(session, table, table_rows)
        if table_rows:
            written.append(table.name)

    real_bulk_insert = writer.bulk_insert
    monkeypatch.setattr(writer, "bulk_insert", bulk_insert)
    monkeypatch.setattr(demo, "CHUNK_ROWS", 50)
    with pytest.raises(RuntimeError, match="disk full"):
        load_demo(engine, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)
    assert {"users", "department_leads", "volunteers"} <= set(written)
    for name in SEEDED_TABLES:
        assert rows(engine, metadata.tables[name]) == [], name
    assert rows(engine, Application) == []
    assert rows(engine, AuditEvent) == []
    assert installed(engine) == declared(engine), "the documents' triggers came back whole"


def test_a_database_that_holds_users_is_refused_and_left_alone(engine: Engine) -> None:
    with write_session(engine) as session:
        session.add(User(username="fox", email="fox@example.org", first_name="F", last_name="F"))
    with pytest.raises(DemoNotEmpty, match="REGDESK_DATABASE_URL"):
        load_demo(engine, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(User)) == 1
        assert session.scalar(select(func.count()).select_from(Role)) == 0
        assert session.scalar(select(func.count()).select_from(Application)) == 0


def test_a_second_demo_is_refused(loaded: DemoResult, engine: Engine) -> None:
    with pytest.raises(DemoNotEmpty):
        load_demo(engine, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)
    assert len(rows(engine, User)) == USERS


@pytest.mark.parametrize(("users", "volunteers"), [(10, 11), (-1, 0), (10, -1), (2, 0)], ids=str)
def test_impossible_sizes_are_refused(engine: Engine, users: int, volunteers: int) -> None:
    with pytest.raises(ValueError, match=r"users|volunteers"):
        load_demo(engine, users=users, volunteers=volunteers, actor=ACTOR)
    assert rows(engine, User) == []


def test_the_smallest_demo_still_works(engine: Engine) -> None:
    result = load_demo(engine, users=3, volunteers=0, actor=ACTOR)
    assert result.users == len(rows(engine, User)) == 3
    assert rows(engine, Volunteer) == []
    assert "no volunteer application" in result.logins[2].purpose


def test_rows_added_after_the_demo_get_new_ids(loaded: DemoResult, engine: Engine) -> None:
    """PostgreSQL's sequences were moved past the ids the demo gave (sync_sequences)."""
    with write_session(engine) as session:
        user = User(username="late", email="late@example.org", first_name="L", last_name="L")
        role = Role(name="Latecomer")
        department = Department(name="Late Desk", email="late@regcon.example")
        session.add_all([user, role, department])
        session.flush()
        event_id = session.scalars(select(Event.id).where(Event.is_current)).one()
        volunteer = Volunteer(event_id=event_id, user_id=user.id)
        session.add(volunteer)
        session.flush()
        session.add(
            VolunteerContactMethod(volunteer_id=volunteer.id, position=0, name="E-mail", value="x")
        )
        session.flush()
        assert user.id == USERS + 1
        assert role.id == loaded.roles + 1
        assert department.id == loaded.departments + 1
        assert volunteer.id == VOLUNTEERS + loaded.past_volunteers + 1


# --- what it made ----------------------------------------------------------------------------


def test_counts_are_as_asked_and_reported(read_only_demo: ReadOnlyDemo) -> None:
    loaded, engine = read_only_demo
    event_id = current_event_id(engine)
    volunteers = rows(engine, Volunteer)
    current = [v for v in volunteers if v.event_id == event_id]
    past = [v for v in volunteers if v.event_id != event_id]
    assert len(rows(engine, User)) == loaded.users == USERS
    assert len(current) == loaded.volunteers == VOLUNTEERS
    assert len({v.user_id for v in current}) == VOLUNTEERS
    assert len(past) == loaded.past_volunteers > 0
    assert len(rows(engine, Department)) == loaded.departments >= 15
    assert len(rows(engine, Role)) == loaded.roles >= 9
    assert len(rows(engine, Event)) == 2
    document = loaded.as_json()
    assert json.loads(json.dumps(document)) == document
    assert (document["users"], document["volunteers"]) == (USERS, VOLUNTEERS)


def test_phones_and_emails_are_already_in_normal_form(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    users = rows(engine, User)
    phones = [u.phone for u in users if u.phone is not None]
    assert len(phones) > USERS * 0.9
    for phone in phones:
        assert normalize_phone(phone, "US") == phone
    for user in users:
        assert normalize_email(user.email) == user.email
    assert len({u.email.lower() for u in users}) == USERS
    assert {u.email.rpartition("@")[2] for u in users} == set(data.EMAIL_DOMAINS)


def test_usernames_are_ascii_and_unique_ignoring_case(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    users = rows(engine, User)
    for user in users:
        assert check_username(user.username) == user.username
        assert user.username.isascii()
        assert re.fullmatch(r"[A-Za-z0-9._-]+", user.username), user.username
    assert len({u.username.lower() for u in users}) == USERS
    assert any(u.username != u.username.lower() for u in users)  # some CamelCase handles


def test_names_are_varied_and_some_users_go_by_another(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    users = rows(engine, User)
    assert any(not (u.first_name + u.last_name).isascii() for u in users)
    assert len({u.last_name for u in users}) > USERS / 3
    preferred = [u for u in users if u.preferred_name]
    assert USERS * 0.05 < len(preferred) < USERS * 0.3


def test_addresses_are_complete_or_absent(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    users = rows(engine, User)
    without = [u for u in users if u.address_line1 is None]
    assert USERS * 0.05 < len(without) < USERS * 0.3
    for user in without:
        assert all(getattr(user, column) is None for column in people.ADDRESS_FIELDS)
    with_address = [u for u in users if u.address_line1 is not None]
    for user in with_address:
        assert user.address_city
        assert user.address_state
        assert user.address_zipcode
        assert normalize_country(user.address_country) == user.address_country
    assert any(u.address_line2 for u in with_address)
    assert len({u.address_country for u in with_address}) >= 5


def test_dates_and_flags_are_plausible(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    today = demo._today()
    users = rows(engine, User)
    for user in users:
        assert user.born_at is not None
        age = (
            today.year
            - user.born_at.year
            - ((today.month, today.day) < (user.born_at.month, user.born_at.day))
        )
        assert 16 <= age <= 75, user.born_at
        assert user.created_at.tzinfo is not None
        assert user.updated_at >= user.created_at
        assert user.created_at <= dt.datetime.now(dt.UTC)
    by_id = sorted(users, key=lambda u: u.id)
    assert [u.created_at for u in by_id] == sorted(u.created_at for u in users)  # creation order
    for flag in ("verified", "identity_verified", "newsletter"):
        assert {getattr(u, flag) for u in users} == {True, False}
    assert any(u.profile_picture_url for u in users)
    for volunteer in rows(engine, Volunteer):
        assert volunteer.updated_at >= volunteer.created_at
        assert volunteer.created_at >= by_id[volunteer.user_id - 1].created_at


def test_roles_have_both_scopes_and_staff_flags(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    roles = {r.id: r for r in rows(engine, Role)}
    assert {r.name for r in roles.values() if r.staff} >= {"Staff", "Department Head", "Board"}
    held = rows(engine, UserRole)
    assert Counter(h.scope for h in held).keys() == {"convention", "global"}
    assert Counter(h.scope for h in held)["convention"] > Counter(h.scope for h in held)["global"]
    assert {roles[h.role_id].name for h in held} == {r.name for r in roles.values()}


def test_departments_have_leads_and_some_are_hidden(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    departments = rows(engine, Department)
    assert any(not d.publicly_visible for d in departments)
    for department in departments:
        assert normalize_email(department.email) == department.email
    leads = rows(engine, DepartmentLead)
    per_department = Counter(lead.department_id for lead in leads)
    assert set(per_department) == {d.id for d in departments}
    assert all(1 <= count <= 3 for count in per_department.values())
    assert len({lead.user_id for lead in leads}) >= 10


def test_options_of_every_type_with_valid_answers(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    options = {o.id: o for o in rows(engine, EventOption)}
    current = [o for o in options.values() if o.event_id == current_event_id(engine)]
    assert {o.type for o in current} == {t.value for t in OptionType}
    answers = rows(engine, VolunteerOptionValue)
    assert {options[a.option_id].type for a in answers} == {t.value for t in OptionType}
    for answer in answers:
        option = options[answer.option_id]
        assert option_value_error(option.type, option.choices, answer.value) is None, answer.value
    answered = Counter(a.volunteer_id for a in answers)
    assert sum(answered.values()) > VOLUNTEERS * len(current) * 0.5  # most answer most


def test_every_volunteer_has_one_primary_contact(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    methods = rows(engine, VolunteerContactMethod)
    by_volunteer: dict[int, list[VolunteerContactMethod]] = {}
    for method in methods:
        by_volunteer.setdefault(method.volunteer_id, []).append(method)
    assert set(by_volunteer) == {v.id for v in rows(engine, Volunteer)}
    for volunteer_methods in by_volunteer.values():
        assert 1 <= len(volunteer_methods) <= 3
        assert sum(m.is_primary for m in volunteer_methods) == 1
        assert len({m.name for m in volunteer_methods}) == len(volunteer_methods)
        assert all(m.value for m in volunteer_methods)
    assert len({m.name for m in methods}) >= 4


def test_volunteers_mark_departments_with_every_state(read_only_demo: ReadOnlyDemo) -> None:
    _, engine = read_only_demo
    states = rows(engine, VolunteerDepartmentState)
    current = {v.id for v in rows(engine, Volunteer) if v.event_id == current_event_id(engine)}
    assert current <= {s.volunteer_id for s in states}
    assert {s.state for s in states} == {state.value for state in DepartmentState}
    per_volunteer = Counter(
        (s.volunteer_id, s.department_id) for s in states if s.volunteer_id in current
    )
    assert max(per_volunteer.values()) <= 3
    leads = {lead.user_id for lead in rows(engine, DepartmentLead)}
    applicants = {v.id for v in rows(engine, Volunteer) if v.user_id not in leads} & current
    flags = Counter(s.state for s in states if s.volunteer_id in applicants)
    assert flags.most_common(1)[0][0] == "interest"


# --- the demo logins and applications --------------------------------------------------------


def test_demo_logins_work_and_no_one_else_has_a_password(engine: Engine) -> None:
    result = load_demo(engine, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)  # real argon2
    users = {u.username: u for u in rows(engine, User)}
    assert [login.username for login in result.logins] == ["admin", "lead", "attendee"]
    for login in result.logins:
        assert verify_password(users[login.username].password_hash, login.password)
        assert not verify_password(users[login.username].password_hash, login.password + "x")
    assert sum(u.password_hash is not None for u in users.values()) == len(result.logins)

    permissions = {(p.user_id, p.name) for p in rows(engine, UserPermission)}
    assert (users["admin"].id, "admin") in permissions
    assert {name for user_id, name in permissions if user_id != users["admin"].id} >= {
        "volunteer:read",
        "user:read",
    }
    assert users["lead"].id in {lead.user_id for lead in rows(engine, DepartmentLead)}
    event_id = current_event_id(engine)
    assert (users["attendee"].id, event_id) in {
        (v.user_id, v.event_id) for v in rows(engine, Volunteer)
    }


def test_demo_applications_hold_their_secrets_and_scopes(
    loaded: DemoResult, engine: Engine
) -> None:
    applications = {a.id: a for a in rows(engine, Application)}
    assert [app.name for app in loaded.applications] == ["Volunteer Time Clock", "Discord Bot"]
    clock, bot = loaded.applications
    for app in loaded.applications:
        stored = applications[app.client_id]
        assert verify_client_secret(stored.secret_hash, app.client_secret)
        assert not verify_client_secret(stored.secret_hash, app.client_secret + "x")
    assert (
        applications[clock.client_id].service_scopes == "user:read volunteer:read registration:read"
    )
    assert applications[bot.client_id].obo_scopes == "pii:basic pii:email"
    assert applications[bot.client_id].redirect_uris == ["http://127.0.0.1:5000/callback"]


def test_summary_shows_logins_and_secrets_once_and_the_audit_log_none(
    loaded: DemoResult, engine: Engine
) -> None:
    summary = loaded.summary()
    for login in loaded.logins:
        assert login.username in summary
        assert login.password in summary
    for app in loaded.applications:
        assert str(app.client_id) in summary
        assert app.client_secret in summary
    assert "shown this once" in summary
    assert f"{USERS:,} users" in summary

    events = rows(engine, AuditEvent)
    loaded_events = [e for e in events if e.action == "demo.loaded"]
    assert len(loaded_events) == 1
    assert loaded_events[0].details["users"] == USERS
    audit_text = json.dumps([e.details for e in events])
    for secret in [
        *(x.password for x in loaded.logins),
        *(a.client_secret for a in loaded.applications),
    ]:
        assert secret not in audit_text


# --- the raw material ------------------------------------------------------------------------


def test_every_phone_pattern_gives_numbers_in_normal_form() -> None:
    rng = random.Random(1)
    for country in data.COUNTRIES:
        for place in country.places:
            prefix, digits = places.phone_pattern(place.phone)
            assert digits >= 2, place
            fills = ["0" * digits, "9" * digits, f"{rng.randrange(10**digits):0{digits}d}"]
            for fill in fills:
                number = prefix + fill
                assert normalize_phone(number, country.code) == number, (place, number)
    with pytest.raises(ValueError, match="last"):
        places.phone_pattern("+1775##5550")


def test_every_name_has_an_ascii_spelling() -> None:
    names = {
        name
        for culture in data.CULTURES
        for group in (culture.given_f, culture.given_m, culture.family, culture.adopted)
        for entry in group
        for name in entry.split("|")
    }
    for name in names | set(data.FAN_NAMES):
        slug = places.slug(name)
        assert slug.isascii(), name
        assert slug.isalnum(), name
    assert places.slug("Łukasz") == "lukasz"
    assert places.slug("Nguyễn") == "nguyen"
    assert places.slug("Kaʻiulani") == "kaiulani"
    assert places.slug("O'Brien") == "obrien"
    assert places.fold("Søren Groß") == "Soren Gross"


def test_every_country_code_and_department_email_is_valid() -> None:
    for country in data.COUNTRIES:
        assert normalize_country(country.code) == country.code
    for department in data.DEPARTMENTS:
        address = f"{department.email_local}@{data.DEPARTMENT_EMAIL_DOMAIN}"
        assert normalize_email(address) == address
    assert len({d.name for d in data.DEPARTMENTS}) == len(data.DEPARTMENTS)


def test_values_are_stored_as_the_orm_stores_them(loaded: DemoResult, engine: Engine) -> None:
    """The demo's bulk writer bypasses SQLAlchemy's executemany: its rows must still be
    stored exactly as the ORM stores the same values (timestamps, dates, booleans, JSON and
    JSON null), or the rest of regdesk would read them differently."""
    user_columns = ["created_at", "updated_at", "born_at", "verified", "newsletter", "phone"]
    with write_session(engine) as session:
        original = session.get(User, 4)
        assert original is not None
        values = {c.key: getattr(original, c.key) for c in User.__table__.columns}
        values.update(id=None, username="copy-of-4", email="copy-of-4@example.org")
        user_copy = User(**values)
        options = list(
            session.scalars(
                select(EventOption).where(
                    EventOption.name.in_(["Preferred shifts", "Languages spoken"])
                )
            )
        )
        assert {o.choices is None for o in options} == {True, False}
        option_copies = [
            EventOption(event_id=o.event_id, name=f"{o.name} 2", type=o.type, choices=o.choices)
            for o in options
        ]
        session.add_all([user_copy, *option_copies])
        session.flush()
        user_pair = (original.id, user_copy.id)
        option_pairs = [(o.id, c.id) for o, c in zip(options, option_copies, strict=True)]

    def stored(table: str, columns: list[str], ids: tuple[int, int]) -> list[tuple[Any, ...]]:
        casts = ", ".join(f"CAST({column} AS TEXT)" for column in columns)
        query = text(f"SELECT {casts} FROM {table} WHERE id IN (:a, :b) ORDER BY id")
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(query, {"a": ids[0], "b": ids[1]})]

    demo_user, orm_user = stored("users", user_columns, user_pair)
    assert demo_user == orm_user
    for pair in option_pairs:
        demo_option, orm_option = stored("event_options", ["choices"], pair)
        assert demo_option == orm_option


def test_every_record_has_its_document_and_the_triggers_keep_them_after_the_demo(
    loaded: DemoResult, engine: Engine
) -> None:
    """The demo writes its rows with the documents' triggers dropped, then makes them again and
    queues every record: each is rendered before the commit, and the triggers after it are
    those the declarations make, and work."""
    assert installed(engine) == declared(engine)
    with read_session(engine) as session:
        for document in DOCUMENTS:
            records = session.scalar(text(f"SELECT count(*) FROM {document.records}"))
            stored = session.scalar(text(f"SELECT count(*) FROM {document.table.name}"))
            assert (document.kind, stored) == (document.kind, records)
        assert session.scalar(select(func.count()).select_from(DocumentQueue)) == 0
        user_id = session.scalars(select(User.id).order_by(User.id)).first()
    with engine.begin() as connection:  # a change by SQL outside regdesk: only a trigger sees it
        connection.execute(
            text("UPDATE users SET first_name = 'Changed' WHERE id = :id"), {"id": user_id}
        )
    with read_session(engine) as session:
        queued = session.scalars(select(DocumentQueue.kind).where(DocumentQueue.key == user_id))
        assert "user" in set(queued)
