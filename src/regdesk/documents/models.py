"""The queue of documents to render again; the documents' own tables come from their
declarations (`Document.table`)."""

from __future__ import annotations

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base


class DocumentQueue(Base):
    """Documents to render again: the kind of record, and its id."""

    __tablename__ = "document_queue"
    __table_args__ = (Index("ix_document_queue_kind_key", "kind", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    key: Mapped[int] = mapped_column(Integer)
