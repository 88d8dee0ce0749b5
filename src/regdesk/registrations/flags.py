"""The organizers' flags on registrations (registrations.md: `{id, shortName}`, such as
"fursuits"): the current event's, added, renamed and deleted, each change an audit event.
Which registrations hold which flags is service.set_flags'."""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import table_of
from regdesk.errors import Invalid
from regdesk.events.models import Event
from regdesk.events.service import current_event_for_writing
from regdesk.fields import text
from regdesk.registrations.models import RegistrationFlag, RegistrationFlagLink

_short_name = text(table_of(RegistrationFlag).c.short_name, nonempty=True)


def flags_of(db: Session, event_id: int) -> list[RegistrationFlag]:
    """The event's flags by name."""
    return list(
        db.scalars(
            select(RegistrationFlag)
            .where(RegistrationFlag.event_id == event_id)
            .order_by(RegistrationFlag.short_name, RegistrationFlag.id)
        )
    )


def holder_counts(db: Session, flag_ids: list[int]) -> dict[int, int]:
    """How many registrations hold each of these flags."""
    if not flag_ids:
        return {}
    rows = db.execute(
        select(RegistrationFlagLink.flag_id, func.count().label("held"))
        .where(RegistrationFlagLink.flag_id.in_(flag_ids))
        .group_by(RegistrationFlagLink.flag_id)
    )
    return {row.flag_id: row.held for row in rows}


def find_current_flag(db: Session, flag_id: int) -> RegistrationFlag | None:
    """The current event's flag with this id."""
    return db.scalars(
        select(RegistrationFlag)
        .join(Event, Event.id == RegistrationFlag.event_id)
        .where(RegistrationFlag.id == flag_id, Event.is_current.is_(True))
    ).first()


def create_flag(db: Session, actor: Actor, short_name: str) -> RegistrationFlag:
    """A new flag of the current event (made if need be)."""
    event = current_event_for_writing(db)
    name = _checked(db, event.id, short_name, None)
    flag = RegistrationFlag(event_id=event.id, short_name=name)
    db.add(flag)
    db.flush()
    record_event(
        db,
        actor,
        "registration_flag.created",
        target_type="registration_flag",
        target_id=flag.id,
        details={"shortName": name},
    )
    return flag


def rename_flag(db: Session, actor: Actor, flag: RegistrationFlag, short_name: str) -> bool:
    """The flag's new name (registrations holding it show it at once); True if it changed."""
    name = _checked(db, flag.event_id, short_name, flag.id)
    if name == flag.short_name:
        return False
    record_event(
        db,
        actor,
        "registration_flag.renamed",
        target_type="registration_flag",
        target_id=flag.id,
        details={"before": {"shortName": flag.short_name}, "after": {"shortName": name}},
    )
    flag.short_name = name
    db.flush()
    return True


def delete_flag(db: Session, actor: Actor, flag: RegistrationFlag) -> int:
    """Deletes the flag, taking it off every registration; how many held it."""
    held = holder_counts(db, [flag.id]).get(flag.id, 0)
    db.execute(delete(RegistrationFlagLink).where(RegistrationFlagLink.flag_id == flag.id))
    db.execute(delete(RegistrationFlag).where(RegistrationFlag.id == flag.id))
    record_event(
        db,
        actor,
        "registration_flag.deleted",
        target_type="registration_flag",
        target_id=flag.id,
        details={"shortName": flag.short_name, "registrations": held},
    )
    return held


def _checked(db: Session, event_id: int, typed: str, flag_id: int | None) -> str:
    """The short name as stored (spaces at the ends dropped), unique in the event; else
    Invalid (`shortName`)."""
    try:
        name: str = _short_name(" ".join(typed.split()))
    except ValueError as exc:
        raise Invalid({"shortName": f"The name {exc}."}) from None
    taken = db.scalar(
        select(RegistrationFlag.id).where(
            RegistrationFlag.event_id == event_id,
            func.lower(RegistrationFlag.short_name) == name.lower(),
            RegistrationFlag.id != (flag_id or 0),
        )
    )
    if taken is not None:
        raise Invalid({"shortName": f"The event already has a flag named {name!r}."})
    return name
