"""registrations: when the badge was printed (issue 17, the desk's badge printing)

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-30 09:00:00.000000

Set by the desk's "Mark printed" and by a batch print, again on a reprint; who printed it is in
the audit log. A plain ADD COLUMN on both databases: no table copy, so SQLite keeps the record
documents' triggers on `registrations` (0009) as they are.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("registrations", sa.Column("badge_printed_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    # SQLite (3.35+) drops a column in place too; no index or trigger names this one.
    op.drop_column("registrations", "badge_printed_at")
