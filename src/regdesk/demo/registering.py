"""The demo's registrations (registrations.md): the event's products, flags and registration
options, and most users registered for it with a badge name, an order, answers and flags.

Most orders are paid, some wait for payment, a few were cancelled or refunded; the staff's
badges are complimentary. Products with a capacity never sell past it: a buyer who finds one
sold out takes an attendee badge instead, as people do. Order numbers come from the seeded
generator (the same seed gives the same numbers); ticket codes are random, like the demo
logins' passwords, since a code is what gets a badge at the desk.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from regdesk.demo import data
from regdesk.demo.generator import Generator
from regdesk.demo.logins import ADMIN, ATTENDEE, LEAD, LOGINS
from regdesk.demo.places import Weighted, timestamp_of
from regdesk.events.models import OptionType
from regdesk.registrations.models import OrderStatus, PaymentMethod
from regdesk.registrations.numbers import new_order_numbers, new_ticket_codes

REGISTERED_SHARE = 0.8  # of the users, by default
STATUSES = Weighted(
    [(OrderStatus.PAID, 85), (OrderStatus.UNPAID, 12), (OrderStatus.CANCELLED, 2),
     (OrderStatus.REFUNDED, 1)]
)  # fmt: skip
METHODS = Weighted([(PaymentMethod.EXTERNAL, 75), (PaymentMethod.TRANSFER, 25)])
EARLY_BIRD_DAYS = 45
BADGE_NAME_SHARE = 0.85  # the others' badges show their name


@dataclass(frozen=True)
class ProductSpec:
    name: str
    display_name: str
    description: str
    price: int  # minor units
    capacity_share: float | None  # places per user of the demo; None: no limit
    weight: int  # how often a buyer picks it
    public: bool = True


PRODUCTS = (
    ProductSpec("attendee", "Attendee", "Four days of the convention.", 6500, None, 60),
    ProductSpec(
        "early-bird",
        "Early Bird Attendee",
        "An attendee badge at last year's price, for the first weeks of registration.",
        5500,
        None,
        0,  # chosen by the early buyers only (EARLY_BIRD_SHARE)
    ),
    ProductSpec(
        "sponsor",
        "Sponsor",
        "An attendee badge with a sponsor ribbon, a T-shirt and early entry to the dealers' den.",
        12000,
        0.1,
        25,
    ),
    ProductSpec(
        "super-sponsor",
        "Super Sponsor",
        "Everything a sponsor gets, a reserved seat at the main events and dinner with the "
        "guests of honor.",
        30000,
        0.015,
        8,
    ),
    ProductSpec(
        "staff",
        "Staff",
        "Complimentary badge for staff and department heads.",
        0,
        None,
        0,
        public=False,
    ),
)
PRODUCT_IDS = {spec.name: i for i, spec in enumerate(PRODUCTS, start=1)}
PICKED = Weighted((spec.name, spec.weight) for spec in PRODUCTS if spec.weight)
EARLY_BIRD_SHARE = 0.5  # of the buyers while early-bird badges are on sale

FLAGS = (("fursuits", 0.08), ("accessibility", 0.03), ("photographer", 0.02))
ARRIVAL_DAYS = ["Thursday", "Friday", "Saturday", "Sunday"]
OPTIONS = (  # (name, type, choices, share who answer)
    ("T-shirt size", OptionType.SELECT, data.SHIRT_SIZES, 0.85),
    ("Dietary needs", OptionType.TEXT, None, 0.2),
    ("Arrival day", OptionType.SELECT, ARRIVAL_DAYS, 0.6),
)


class Registering(Generator):
    """The products', flags', options', orders' and registrations' rows."""

    def _registrations(self) -> None:
        event_id = self.current_event.event_id
        opened = self.current_event.opened
        early_until = opened + EARLY_BIRD_DAYS * 86400
        self._products(event_id, opened, early_until)
        for flag_id, (name, _share) in enumerate(FLAGS, start=1):
            self.add(
                "registration_flags", {"id": flag_id, "event_id": event_id, "short_name": name}
            )
        for option_id, (name, kind, choices, _share) in enumerate(OPTIONS, start=1):
            self.add(
                "registration_options",
                {
                    "id": option_id,
                    "event_id": event_id,
                    "name": name,
                    "type": kind.value,
                    "choices": choices,
                    "position": option_id - 1,
                },
            )
        buyers = self._buyers()
        numbers = new_order_numbers(len(buyers), set(), self._below)
        codes = new_ticket_codes(len(buyers))
        capacity = {
            spec.name: max(1, round(self.user_count * spec.capacity_share))
            for spec in PRODUCTS
            if spec.capacity_share is not None
        }
        sold = dict.fromkeys(capacity, 0)
        self.paid_count = 0
        for registration_id, (created, user_id, staff) in enumerate(buyers, start=1):
            status = OrderStatus.PAID if staff or user_id in LOGINS else STATUSES.pick(self.rng)
            if staff:
                product = "staff"
            elif created < early_until and self.random() < EARLY_BIRD_SHARE:
                product = "early-bird"
            else:
                product = PICKED.pick(self.rng)
            if product in sold and sold[product] >= capacity[product]:
                product = "attendee"  # sold out: a plain badge instead
            if product in sold and status in (OrderStatus.PAID, OrderStatus.UNPAID):
                sold[product] += 1  # a live order holds its place
            self.paid_count += status == OrderStatus.PAID
            number, code = numbers[registration_id - 1], codes[registration_id - 1]
            created_at = timestamp_of(created)  # the order's and its registration's
            changed_at = self._order(
                registration_id, number, user_id, product, status, created, created_at
            )
            self._registration(
                registration_id, code, user_id, status, created, created_at, changed_at
            )
        self.registration_count = len(buyers)

    def _products(self, event_id: int, opened: float, early_until: float) -> None:
        created = timestamp_of(opened - 14 * 86400)
        for position, spec in enumerate(PRODUCTS):
            early = spec.name == "early-bird"
            self.add(
                "products",
                {
                    "id": PRODUCT_IDS[spec.name],
                    "event_id": event_id,
                    "name": spec.name,
                    "display_name": spec.display_name,
                    "description": spec.description,
                    "price": spec.price,
                    "capacity": (
                        None
                        if spec.capacity_share is None
                        else max(1, round(self.user_count * spec.capacity_share))
                    ),
                    "opens_at": timestamp_of(opened) if early else None,
                    "closes_at": timestamp_of(early_until) if early else None,
                    "public": spec.public,
                    "position": position,
                    "created_at": created,
                    "updated_at": created,
                },
            )

    def _buyers(self) -> list[tuple[float, int, bool]]:
        """(when, user id, staff) of each registration, in the order they came."""
        staff = [ADMIN.user_id, LEAD.user_id, *(u for ids in self.leads.values() for u in ids)]
        chosen = list(dict.fromkeys([*staff, ATTENDEE.user_id]))[: self.registration_count]
        taken = set(chosen)
        bulk = range(len(LOGINS) + 1, self.user_count + 1)
        wanted = self.registration_count - len(chosen)
        for user_id in self.rng.sample(bulk, min(len(bulk), wanted + len(taken))):
            if len(chosen) == self.registration_count:
                break
            if user_id not in taken:
                chosen.append(user_id)
                taken.add(user_id)
        staff_set = set(staff)
        opened = self.current_event.opened
        buyers = [
            (self._after(max(self.created[u - 1], opened)), u, u in staff_set) for u in chosen
        ]
        buyers.sort()
        return buyers

    def _order(
        self,
        order_id: int,
        number: str,
        user_id: int,
        product: str,
        status: OrderStatus,
        created: float,
        created_at: dt.datetime,
    ) -> dt.datetime:
        """Its row; returns when it last changed."""
        paid = status in (OrderStatus.PAID, OrderStatus.REFUNDED)
        method = None
        if paid:
            method = PaymentMethod.COMP if product == "staff" else METHODS.pick(self.rng)
        paid_when = self._after(created, min(created + 7 * 86400, self.now - 60))  # drawn anyway
        ended = status in (OrderStatus.CANCELLED, OrderStatus.REFUNDED)
        changed_at = timestamp_of(self._after(created)) if ended else created_at
        self.add(
            "orders",
            {
                "id": order_id,
                "number": number,
                "event_id": self.current_event.event_id,
                "user_id": user_id,
                "product_id": PRODUCT_IDS[product],
                "status": status.value,
                "amount": PRODUCTS[PRODUCT_IDS[product] - 1].price,
                "currency": self.currency,
                "payment_method": method.value if method else None,
                "payment_reference": _reference(method, number),
                "paid_at": timestamp_of(paid_when) if paid else None,
                "created_at": created_at,
                "updated_at": changed_at,
            },
        )
        return changed_at

    def _registration(
        self,
        registration_id: int,
        code: str,
        user_id: int,
        status: OrderStatus,
        created: float,
        created_at: dt.datetime,
        changed_at: dt.datetime,
    ) -> None:
        ended = status in (OrderStatus.CANCELLED, OrderStatus.REFUNDED)
        self.add(
            "registrations",
            {
                "id": registration_id,
                "event_id": self.current_event.event_id,
                "user_id": user_id,
                "order_id": registration_id,
                "badge_name": self._badge_name() if self.random() < BADGE_NAME_SHARE else None,
                "ticket_code": code,
                "checked_in_at": None,  # the event is still ahead
                "checked_in_by": None,
                "ended_at": changed_at if ended else None,
                "created_at": created_at,
                "updated_at": self._updated(created, created_at),
            },
        )
        for flag_id, (_name, share) in enumerate(FLAGS, start=1):
            if self.random() < share:
                self.add(
                    "registration_flag_links",
                    {"registration_id": registration_id, "flag_id": flag_id},
                )
        for option_id, (_name, _kind, _choices, share) in enumerate(OPTIONS, start=1):
            if self.random() < share:
                self.add(
                    "registration_option_values",
                    {
                        "registration_id": registration_id,
                        "option_id": option_id,
                        "value": self._answer(option_id),
                    },
                )

    def _answer(self, option_id: int) -> str:
        if option_id == 1:
            return self.rng.choices(data.SHIRT_SIZES, data.SHIRT_SIZE_WEIGHTS)[0]
        if option_id == 2:
            return ", ".join(self.rng.sample(data.DIETARY_NEEDS, self._choice((1, 1, 1, 2))))
        return self._choice(ARRIVAL_DAYS)

    def _badge_name(self) -> str:
        """What fans put on a badge: a fan name, a handle's words, or both."""
        roll = self.random()
        name = self._choice(data.FAN_NAMES)
        creature = self._choice(data.HANDLE_CREATURES).capitalize()
        if roll < 0.4:
            return name
        if roll < 0.7:
            return f"{name} the {creature}"
        return f"{self._choice(data.HANDLE_WORDS).capitalize()} {creature}"


def _reference(method: PaymentMethod | None, number: str) -> str | None:
    """The shop's or the bank's reference of a payment (none for a desk sale or a comp)."""
    if method == PaymentMethod.EXTERNAL:
        return f"SHOP-{number}"
    if method == PaymentMethod.TRANSFER:
        return f"REG {number}"
    return None
