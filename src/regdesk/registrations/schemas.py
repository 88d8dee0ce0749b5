"""The registration record of registrations.md (API), the registration search request, and a
user's own orders (`GET /api/users/current/orders`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
    field_validator,
)
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from regdesk.formats import format_timestamp
from regdesk.schemas import PageRequest, Record
from regdesk.users.schemas import NestedUser, render_nested_user
from regdesk.volunteers.schemas import Option

MAX_IDS = 100  # registrations.md: at most 100 user ids a search


class RegistrationOrder(Record):
    orderId: str = Field(examples=["10482"], description="Decimal digits.")
    status: Literal["paid", "unpaid"]


class RegistrationFlag(Record):
    id: str = Field(examples=["1"])
    shortName: str


class Registration(Record):
    id: int = Field(examples=[41])
    createdAt: str = Field(examples=["2026-07-04T18:30:00.000Z"])
    updatedAt: str
    badgeName: str | None
    status: Literal["paid", "unpaid"] = Field(description="The order's status.")
    productId: str = Field(examples=["3"])
    productName: str
    productDisplayName: str | None
    order: RegistrationOrder
    options: list[Option]
    flags: list[RegistrationFlag] = Field(description="In flag id order.")
    user: NestedUser


class RegistrationPage(Record):
    data: list[Registration]
    nextPage: str | None
    hasMore: bool


class UserOrder(Record):
    orderId: str = Field(examples=["10482"], description="Decimal digits.")
    status: Literal["unpaid", "paid", "cancelled", "refunded"]
    productId: str = Field(examples=["3"])
    productName: str = Field(examples=["sponsor"])
    amount: int = Field(examples=[12000], description="In the currency's minor units (cents).")
    currency: str = Field(examples=["USD"], description="ISO 4217.")
    paymentMethod: Literal["desk", "transfer", "external", "comp"] | None = Field(
        description="How it was paid; null while unpaid."
    )
    createdAt: str = Field(examples=["2026-07-04T18:30:00.000Z"])
    paidAt: str | None = Field(description="When it was paid; null when it was not.")


class UserOrderList(Record):
    data: list[UserOrder] = Field(description="Newest first.")


# An array of ids, each an integer or a string of digits (real clients send both).
IdList = Annotated[
    list[StrictInt | Annotated[StrictStr, StringConstraints(pattern=r"^[0-9]+$")]],
    Field(max_length=MAX_IDS),
]


class RegistrationFilter(Record):
    userIds: IdList | None = Field(
        default=None, description="Registrations of these users (at most 100 ids)."
    )
    status: Literal["paid", "unpaid"] | None = Field(default=None, description="The order's.")
    productIds: IdList | None = Field(
        default=None, description="Registrations for these products (at most 100 ids)."
    )

    @field_validator("userIds", "productIds", mode="wrap")
    @classmethod
    def _as_integers(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> list[int] | None:
        """The ids as integers; anything else one error naming the array (not pydantic's one
        per branch of the union)."""
        try:
            checked: Sequence[int | str] | None = handler(value)
            return None if checked is None else [int(item) for item in checked]
        except (ValidationError, ValueError):  # ValueError: more digits than int() takes
            raise ValueError(
                f"An array of at most {MAX_IDS} ids, each an integer or a string of digits."
            ) from None


class RegistrationSearch(PageRequest):
    filter: RegistrationFilter | None = Field(
        default=None, description="Members combine with AND; an unknown member is a 400."
    )


def render_registration(
    row: Any, flags: Sequence[Any], options: Sequence[Any] = ()
) -> dict[str, Any]:
    """registrations.md's record from a registration row joined with its order, product and
    user's columns, its flags in id order and its option answers in the options' order."""
    return {
        "id": row.registration_id,
        "createdAt": format_timestamp(row.registration_created_at),
        "updatedAt": format_timestamp(row.registration_updated_at),
        "badgeName": row.badge_name,
        "status": row.order_status,
        "productId": str(row.product_id),
        "productName": row.product_name,
        "productDisplayName": row.product_display_name,
        "order": {"orderId": row.order_number, "status": row.order_status},
        "options": [
            {"name": option.name, "type": option.type, "value": option.value} for option in options
        ],
        "flags": [{"id": str(flag.flag_id), "shortName": flag.short_name} for flag in flags],
        "user": render_nested_user(row),
    }


def render_order(order: Any) -> dict[str, Any]:
    """registrations.md's order of `GET /api/users/current/orders`, from an order row joined
    with its product's name."""
    return {
        "orderId": order.number,
        "status": order.status,
        "productId": str(order.product_id),
        "productName": order.product_name,
        "amount": order.amount,
        "currency": order.currency,
        "paymentMethod": order.payment_method,
        "createdAt": format_timestamp(order.created_at),
        "paidAt": None if order.paid_at is None else format_timestamp(order.paid_at),
    }
