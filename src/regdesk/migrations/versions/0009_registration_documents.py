"""registration record documents, kept in step by triggers (registrations.md, API; issue 15)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 10:00:00.000000

The registration document's table and the triggers its declaration makes
(regdesk.registrations.records.DOCUMENT); every registration already there is queued.
"""

from collections.abc import Sequence

from alembic import op

from regdesk.documents import triggers
from regdesk.models import DOCUMENTS

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The declarations this revision installs (documents.triggers.fingerprint): a declaration
# changed since needs a revision of its own that reinstalls it.
DECLARED = {"registration": "3b37c6ae59c2f381"}
# The tables the declaration watched then: a later revision that adds a table to it reinstalls
# it whole (0010: registration options), and this one must not name a table not made yet.
WATCHED = (
    "users",
    "registrations",
    "orders",
    "products",
    "registration_flag_links",
    "registration_flags",
)
INSTALLED = [
    document.without(stale.table for stale in document.stale if stale.table not in WATCHED)
    for document in DOCUMENTS
    if document.kind in DECLARED
]


def upgrade() -> None:
    triggers.install(op.execute, op.get_bind().dialect.name, INSTALLED, create_tables=True)


def downgrade() -> None:
    triggers.uninstall(op.execute, op.get_bind().dialect.name, INSTALLED, drop_tables=True)
