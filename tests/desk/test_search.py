"""The desk's search (desk/search.py) on both databases: each kind of input finds what it
should, and every search is answered from an index (the desk has 100,000 registrations to
look through while a queue waits)."""

from __future__ import annotations

import re

from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session

from regdesk.desk.search import find
from regdesk.registrations.ticket_codes import TicketKeys, keys_read_in
from tests.desk.support import queue

TABLES = r"(registrations|users|orders)"


def test_each_kind_of_input_finds_its_registrations(engine: Engine) -> None:
    line = queue(engine)
    keys = TicketKeys()
    fox_code = line.code(engine, line.fox)
    with Session(engine) as session:
        assert find(session, fox_code, keys).card == line.fox.registration_id
        assert find(session, fox_code.lower(), keys).card == line.fox.registration_id
        assert find(session, line.owl.number, keys).card == line.owl.registration_id
        forged = fox_code[:-1] + ("A" if fox_code[-1] != "A" else "B")
        assert find(session, forged, keys).forged

        def ids(typed: str) -> list[int]:
            return [found.registration.id for found in find(session, typed, keys).lines]

        every = [line.fox.registration_id, line.owl.registration_id, line.cat.registration_id]
        assert ids("Fae") == every
        assert ids("fae owl") == [line.owl.registration_id]
        assert ids("OLIVE@example.org") == [line.owl.registration_id]
        assert ids("Night Ow") == [line.owl.registration_id]
        assert ids("ca") == [line.cat.registration_id]
        assert ids("50%") == ids("_") == []  # taken literally


def test_every_search_is_answered_from_an_index(engine: Engine) -> None:
    """No kind of input reads a whole table of registrations, orders or people, nor every
    registration of the event."""
    line = queue(engine)
    keys = TicketKeys()
    inputs = [line.code(engine, line.fox), line.fox.number, "fox@example.org", "fae", "fae fox"]
    statements: list[tuple[str, object]] = []

    def remember(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if re.search(rf"\b(FROM|JOIN) {TABLES}\b", statement):
            statements.append((statement, parameters))

    with Session(engine) as session:
        keys.current(keys_read_in(session))  # read once beforehand: the key store's, not ours
        event.listen(engine, "before_cursor_execute", remember)
        try:
            for typed in inputs:
                find(session, typed, keys)
        finally:
            event.remove(engine, "before_cursor_execute", remember)
        assert len(statements) >= len(inputs)
        postgresql = engine.dialect.name == "postgresql"
        if postgresql:
            # Statistics, as a live database has them (autovacuum's), and a tiny table: ask
            # what the planner could do rather than what is cheapest for three rows.
            session.execute(text("ANALYZE registrations, users, orders"))
            session.execute(text("SET enable_seqscan = off"))
        for statement, parameters in statements:
            explain = "EXPLAIN " if postgresql else "EXPLAIN QUERY PLAN "
            plan = " | ".join(
                str(row[-1])
                for row in session.connection().exec_driver_sql(explain + statement, parameters)
            )
            assert not re.search(rf"\b(Seq Scan on|SCAN) {TABLES}\b", plan), (statement, plan)
            # Nor all of the event's, one by one (the index that pages through them in order).
            assert "ix_registrations_event_id_id" not in plan, (statement, plan)
