"""rendered record documents, kept in step by triggers

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 10:00:00.000000

User and volunteer records are kept as ready JSON (regdesk/documents). A trigger on every
table a record shows deletes the records a change touches and queues them to be rendered
again, in the same statement as the change: a reader never sees a document older than the
data, whoever wrote it (the API, the CLI, an import, or SQL typed by an operator).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DOCUMENTS = {
    "user": ("user_documents", "user_id"),
    "volunteer": ("volunteer_documents", "volunteer_id"),
}

# The columns of users that api.md 2.2 and 2.3 show (an update of any other, such as the
# password hash, leaves the documents alone).
USER_COLUMNS = (
    "email",
    "preferred_name",
    "first_name",
    "last_name",
    "username",
    "verified",
    "phone",
    "address_line1",
    "address_line2",
    "address_city",
    "address_state",
    "address_zipcode",
    "address_country",
)


class Rule:
    """A change to `table` makes these documents stale: (kind, ids as SQL of the row `R`)."""

    def __init__(
        self,
        table: str,
        operations: tuple[str, ...],
        stale: tuple[tuple[str, str], ...],
        columns: tuple[str, ...] = (),
    ) -> None:
        self.table, self.operations, self.stale, self.columns = table, operations, stale, columns


VOLUNTEERS_OF_USER = "SELECT id FROM volunteers WHERE user_id = R.user_id"
ALL = ("INSERT", "UPDATE", "DELETE")

RULES = (
    Rule("users", ("INSERT",), (("user", "SELECT R.id"),)),
    Rule(
        "users",
        ("UPDATE",),
        (("user", "SELECT R.id"), ("volunteer", "SELECT id FROM volunteers WHERE user_id = R.id")),
        USER_COLUMNS,
    ),
    Rule(
        "volunteers",
        ("INSERT", "UPDATE"),
        (("volunteer", "SELECT R.id"),),
        ("id", "event_id", "user_id", "created_at", "updated_at"),
    ),
    Rule("volunteer_contact_methods", ALL, (("volunteer", "SELECT R.volunteer_id"),)),
    Rule("volunteer_department_states", ALL, (("volunteer", "SELECT R.volunteer_id"),)),
    Rule("volunteer_option_values", ALL, (("volunteer", "SELECT R.volunteer_id"),)),
    Rule("user_roles", ALL, (("volunteer", VOLUNTEERS_OF_USER),)),  # isStaff
    Rule(
        "departments",
        ("UPDATE",),
        (
            (
                "volunteer",
                "SELECT volunteer_id FROM volunteer_department_states WHERE department_id = R.id",
            ),
        ),
        ("name",),
    ),
    Rule(
        "event_options",
        ("UPDATE",),
        (("volunteer", "SELECT volunteer_id FROM volunteer_option_values WHERE option_id = R.id"),),
        ("name", "type", "position"),
    ),
    Rule(
        "roles",
        ("UPDATE",),
        (
            (
                "volunteer",
                "SELECT v.id FROM volunteers v JOIN user_roles ur ON ur.user_id = v.user_id"
                " WHERE ur.role_id = R.id",
            ),
        ),
        ("staff",),
    ),
)


def _statements(rule: Rule, row: str) -> list[str]:
    """Delete the stale documents and queue them, for the row named `row` (NEW or OLD)."""
    statements = []
    for kind, ids in rule.stale:
        table, key = DOCUMENTS[kind]
        column, _, source = ids.replace("R.", f"{row}.").removeprefix("SELECT ").partition(" FROM ")
        source = f" FROM {source}" if source else ""
        # Names and SQL from RULES above, nothing from outside.
        statements.append(f"DELETE FROM {table} WHERE {key} IN (SELECT {column}{source})")  # noqa: S608
        statements.append(
            f"INSERT INTO document_queue (kind, key) SELECT '{kind}', {column}{source}"
        )
    return statements


def _function(rule: Rule) -> str:
    return f"documents_{rule.table}_{'_'.join(o.lower() for o in rule.operations)}"


def _changed(rule: Rule, different: str) -> str:
    return " OR ".join(f"OLD.{c} {different} NEW.{c}" for c in rule.columns)


def _rows(operation: str) -> tuple[str, ...]:
    return {"INSERT": ("NEW",), "UPDATE": ("OLD", "NEW"), "DELETE": ("OLD",)}[operation]


def _sqlite_triggers() -> list[str]:
    created = []
    for rule in RULES:
        for operation in rule.operations:
            name = f"documents_{rule.table}_{operation.lower()}"
            when = (
                f" WHEN {_changed(rule, 'IS NOT')}"
                if operation == "UPDATE" and rule.columns
                else ""
            )
            body = "".join(
                f"  {statement};\n"
                for row in _rows(operation)
                for statement in _statements(rule, row)
            )
            created.append(
                f"CREATE TRIGGER {name} AFTER {operation} ON {rule.table} FOR EACH ROW{when}\n"
                f"BEGIN\n{body}END"
            )
    return created


def _postgresql_triggers() -> list[str]:
    created = []
    for rule in RULES:
        function = _function(rule)
        branches = "".join(
            f"  IF TG_OP IN ({', '.join(repr(op) for op in ops)}) THEN\n"
            + "".join(f"    {statement};\n" for statement in _statements(rule, row))
            + "  END IF;\n"
            for row, ops in (("OLD", ("UPDATE", "DELETE")), ("NEW", ("INSERT", "UPDATE")))
        )
        created.append(
            f"CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"BEGIN\n{branches}  RETURN NULL;\nEND\n$$"
        )
        for operation in rule.operations:
            when = (
                f" WHEN ({_changed(rule, 'IS DISTINCT FROM')})"
                if operation == "UPDATE" and rule.columns
                else ""
            )
            created.append(
                f"CREATE TRIGGER {function}_{operation.lower()} AFTER {operation} ON {rule.table}"
                f" FOR EACH ROW{when} EXECUTE FUNCTION {function}()"
            )
    return created


def upgrade() -> None:
    op.create_table(
        "user_documents",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_documents_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_user_documents")),
    )
    op.create_table(
        "volunteer_documents",
        sa.Column("volunteer_id", sa.Integer(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["volunteer_id"],
            ["volunteers.id"],
            name=op.f("fk_volunteer_documents_volunteer_id_volunteers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("volunteer_id", name=op.f("pk_volunteer_documents")),
    )
    # The triggers find a user's applications by user (and so does every user page).
    op.create_index(op.f("ix_volunteers_user_id"), "volunteers", ["user_id"])
    op.create_table(
        "document_queue",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("key", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_document_queue")),
    )
    # The refresh reads each queued record once, in key order.
    op.create_index(op.f("ix_document_queue_kind_key"), "document_queue", ["kind", "key"])
    for statement in created(op.get_bind().dialect.name == "postgresql"):
        op.execute(statement)
    # Every record existing before this revision is rendered by the next write (`regdesk db
    # upgrade` runs one); until then readers render them from the tables.
    op.execute("INSERT INTO document_queue (kind, key) SELECT 'user', id FROM users")
    op.execute("INSERT INTO document_queue (kind, key) SELECT 'volunteer', id FROM volunteers")


def dropped(postgresql: bool) -> list[str]:
    """The statements that drop this revision's triggers (and, on PostgreSQL, functions), by
    the names they were made with (also used by 0007, which replaces them)."""
    statements = []
    for rule in RULES:
        for operation in rule.operations:
            if postgresql:
                trigger = f"{_function(rule)}_{operation.lower()}"
                statements.append(f"DROP TRIGGER {trigger} ON {rule.table}")
            else:
                statements.append(f"DROP TRIGGER documents_{rule.table}_{operation.lower()}")
        if postgresql:
            statements.append(f"DROP FUNCTION {_function(rule)}()")
    return statements


def created(postgresql: bool) -> list[str]:
    """The statements that make this revision's triggers (also used by 0007's downgrade)."""
    return _postgresql_triggers() if postgresql else _sqlite_triggers()


def downgrade() -> None:
    for statement in dropped(op.get_bind().dialect.name == "postgresql"):
        op.execute(statement)
    op.drop_table("document_queue")
    op.drop_table("volunteer_documents")
    op.drop_table("user_documents")
    op.drop_index(op.f("ix_volunteers_user_id"), table_name="volunteers")
