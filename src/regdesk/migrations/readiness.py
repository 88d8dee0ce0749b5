"""Whether this process may be sent traffic (GET /readyz): its database answers, and its schema
is the one this code needs. Read only: nothing is migrated here (`regdesk db upgrade` does).

A load balancer asks every few seconds, so this is one query (the schema's revision), with the
code's own head read from the migration scripts once per process.
"""

from __future__ import annotations

from functools import cache

from sqlalchemy import Engine

from regdesk.migrations.revisions import current_revision, head_revision

UNREACHABLE = "the database does not answer"


@cache
def code_head() -> str | None:
    """The revision this code's migrations end at: the scripts do not change while it runs."""
    return head_revision()


def unready(engine: Engine) -> str | None:
    """Why traffic should not come here now; None: ready."""
    try:
        current = current_revision(engine)
    except Exception:  # any failure to read the revision: not ready, whatever the cause
        return UNREACHABLE
    head = code_head()
    if current != head:
        return (
            f"the database schema is at revision {current or 'none'}; this regdesk needs "
            f"{head}: run `regdesk db upgrade`"
        )
    return None
