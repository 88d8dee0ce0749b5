"""audit_events: the id of the request that recorded the event (issue 21, logs)

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 09:00:00.000000

The X-Request-ID of the request during which the event was recorded, as its JSON log lines
carry it, so that an event and its request's lines are found together; NULL for events
recorded outside a request (a command) and for every event recorded before. A plain ADD COLUMN
on both databases, no index: it is read with its event, not searched.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("audit_events", sa.Column("request_id", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.drop_column("audit_events", "request_id")
