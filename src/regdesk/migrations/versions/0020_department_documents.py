"""department record documents, kept in step by triggers (api.md 4.5; issue 20)

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29 02:00:00.000000

The department document's table and the triggers its declaration makes
(regdesk.departments.records.DOCUMENT); every department already there is queued, and the
list is rendered from the tables until the next write renders them.
"""

from collections.abc import Sequence

from alembic import op

from regdesk.documents import triggers
from regdesk.models import DOCUMENTS

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The declarations this revision installs (documents.triggers.fingerprint): a declaration
# changed since needs a revision of its own that reinstalls it.
DECLARED = {"department": "7fca8bb80de5dce7"}
INSTALLED = [document for document in DOCUMENTS if document.kind in DECLARED]


def upgrade() -> None:
    triggers.install(op.execute, op.get_bind().dialect.name, INSTALLED, create_tables=True)


def downgrade() -> None:
    triggers.uninstall(op.execute, op.get_bind().dialect.name, INSTALLED, drop_tables=True)
