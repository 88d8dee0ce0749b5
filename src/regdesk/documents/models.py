"""Records kept rendered: the JSON of api.md 2.2 (user) and 2.5 (volunteer), ready to send.

Derived data, never the source of truth. Database triggers (migration 0003) delete a document
in the same statement that changes anything it shows, and queue its key in `document_queue`;
`documents.service.refresh` renders what is queued before each write transaction commits. A
reader that finds no document renders the record from the source tables instead, so a change
shows in the very next read whoever made it.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base


class UserDocument(Base):
    __tablename__ = "user_documents"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    body: Mapped[str] = mapped_column(Text)


class VolunteerDocument(Base):
    __tablename__ = "volunteer_documents"

    volunteer_id: Mapped[int] = mapped_column(
        ForeignKey("volunteers.id", ondelete="CASCADE"), primary_key=True
    )
    body: Mapped[str] = mapped_column(Text)


class DocumentQueue(Base):
    """Documents to render again: kind `user` or `volunteer`, and the record's id."""

    __tablename__ = "document_queue"
    __table_args__ = (Index("ix_document_queue_kind_key", "kind", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    key: Mapped[int] = mapped_column(Integer)
