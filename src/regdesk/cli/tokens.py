"""`regdesk tokens`: issued codes and tokens."""

from __future__ import annotations

import click

from regdesk.cli import Context, emit, json_option, main, pass_context


@main.group()
def tokens() -> None:
    """Issued codes and tokens."""


@tokens.command("purge")
@click.option("--batch-size", default=5000, show_default=True, type=click.IntRange(1, 100000))
@json_option
@pass_context
def tokens_purge(context: Context, batch_size: int, as_json: bool) -> None:
    """Delete expired codes, tokens, sign-in sessions and dead grants (run it on a schedule)."""
    from regdesk.oauth.grants import purge
    from regdesk.web.sessions import purge_sessions

    counts: dict[str, int] = purge(context.migrated_engine, batch=batch_size).as_json()
    with context.writing() as session:
        counts["webSessions"] = purge_sessions(session)
    emit(as_json, counts, "purged: " + ", ".join(f"{n} {kind}" for kind, n in counts.items()))
