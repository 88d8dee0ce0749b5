"""Per-deployment values every process must share: the generated secret key."""

from __future__ import annotations

import datetime as dt
import secrets

from sqlalchemy import Engine, String, select
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, upsert_ignore, utcnow, write_session


class InstanceSetting(Base):
    """Per-deployment values that every process must share, such as the generated secret key."""

    __tablename__ = "instance_settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


def instance_secret_key(engine: Engine, configured: str | None) -> str:
    """The secret key: the configured one, else the one this deployment generated once.

    The first process to ask writes it; a concurrent one loses the insert race and reads the
    winner's, so every worker of one deployment agrees (operator.md, REGDESK_SECRET_KEY).
    """
    if configured:
        return configured
    with write_session(engine) as session:
        upsert_ignore(
            session,
            InstanceSetting.__table__,
            {"key": "secret_key", "value": secrets.token_urlsafe(48), "created_at": utcnow()},
        )
        return session.scalars(
            select(InstanceSetting.value).where(InstanceSetting.key == "secret_key")
        ).one()
