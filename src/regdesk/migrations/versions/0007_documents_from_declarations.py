"""record documents kept in step by triggers made from their declarations (issue 14)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 10:00:00.000000

0003 wrote its triggers out by hand; from here on they are made from each resource's
declaration (regdesk.documents): one trigger function per table a document watches, named
after the document. The documents themselves stay as rendered: the same changes make them
stale as before.
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

from regdesk.documents import triggers
from regdesk.models import DOCUMENTS

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The declarations this revision installs (documents.triggers.fingerprint): a declaration
# changed since needs a revision of its own that reinstalls it.
DECLARED = {"user": "3eaf6802af68bd84", "volunteer": "24fb37cea5036216"}
# Only those: later revisions install the documents of tables made after this one.
INSTALLED = [document for document in DOCUMENTS if document.kind in DECLARED]


def _revision_0003() -> ModuleType:
    path = Path(__file__).with_name("0003_record_documents.py")
    spec = importlib.util.spec_from_file_location("regdesk_revision_0003", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    for statement in _revision_0003().dropped(dialect == "postgresql"):
        op.execute(statement)
    triggers.install(op.execute, dialect, INSTALLED, create_tables=False)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    triggers.uninstall(op.execute, dialect, INSTALLED, drop_tables=False)
    for statement in _revision_0003().created(dialect == "postgresql"):
        op.execute(statement)
