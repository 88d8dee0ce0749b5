"""What the desk's tests share: a paid, an unpaid and a cancelled registration of one
product (`queue`), the badges of two products with a flag (`printing`), and the desk staff."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.oauth.permissions import DESK
from regdesk.registrations.flags import create_flag
from regdesk.registrations.models import OrderStatus, Registration
from regdesk.registrations.service import set_flags
from regdesk.registrations.ticket_codes import ensure_key, ticket_of
from tests.admin.registering import Held, ended, make_product, paid, registered, registration_row
from tests.web.support import make_user


@dataclass(frozen=True)
class Queue:
    """Who stands at the desk: fox has paid, owl has not, cat cancelled."""

    fox: Held
    owl: Held
    cat: Held
    fox_id: int
    owl_id: int
    cat_id: int

    def code(self, engine: Engine, held: Held) -> str:
        """The ticket as the attendee's QR code holds it: the registration's code, signed."""
        with write_session(engine) as session:
            return ticket_of(session, registration_row(engine, held).ticket_code)

    def registration(self, engine: Engine, held: Held) -> Registration:
        return registration_row(engine, held)


def queue(engine: Engine) -> Queue:
    product = make_product(engine, "attendee", price="65.00", display_name="Attendee")
    fox = make_user(engine, "fox", email="fae.fox@example.org")
    owl = make_user(engine, "owl", email="olive@example.org")
    cat = make_user(engine, "cat", email="cat@example.org")
    fox_held = registered(engine, fox, product, badge="Fae the Fox")
    paid(engine, fox_held)
    owl_held = registered(engine, owl, product, badge="Night Owl")
    cat_held = registered(engine, cat, product)
    ended(engine, cat_held, OrderStatus.CANCELLED)
    return Queue(fox_held, owl_held, cat_held, fox, owl, cat)


def desk_staff(engine: Engine, username: str = "dee") -> int:
    return make_user(engine, username, permissions=[DESK])


@dataclass(frozen=True)
class Printing:
    """Badges to print: fox (attendee, paid, flagged fursuits), owl (attendee, unpaid), cat
    (attendee, cancelled), elk (sponsor, paid, no badge name) and ram (attendee, paid), in
    that order of registration."""

    attendee: int
    sponsor: int
    fursuits: int  # the flag
    held: dict[str, Held]

    def id(self, name: str) -> int:
        return self.held[name].registration_id


def printing(engine: Engine) -> Printing:
    attendee = make_product(engine, "attendee", price="65.00", display_name="Attendee")
    sponsor = make_product(engine, "sponsor", price="120.00", display_name="Sponsor")
    with write_session(engine) as session:
        fursuits = create_flag(session, Actor("test"), "fursuits").id
        ensure_key(session)  # as the app does at start: a badge signs its ticket with it
    held = {}
    for name, product, badge in (
        ("fox", attendee, "Fae the Fox"),
        ("owl", attendee, "Night Owl"),
        ("cat", attendee, None),
        ("elk", sponsor, None),
        ("ram", attendee, "Ram"),
    ):
        held[name] = registered(engine, make_user(engine, name), product, badge=badge)
    for name in ("fox", "elk", "ram"):
        paid(engine, held[name])
    ended(engine, held["cat"], OrderStatus.CANCELLED)
    with write_session(engine) as session:
        fox = session.get_one(Registration, held["fox"].registration_id)
        set_flags(session, Actor("test"), fox, [fursuits])
    return Printing(attendee, sponsor, fursuits, held)
