"""`regdesk demo`: fill an empty database with realistic synthetic data."""

from __future__ import annotations

import click

from regdesk.audit.service import Actor
from regdesk.cli import Context, emit, json_option, main, pass_context


@main.command()
@click.option("--users", default=1000, show_default=True, type=click.IntRange(0))
@click.option("--volunteers", default=200, show_default=True, type=click.IntRange(0))
@click.option(
    "--registrations",
    type=click.IntRange(0),
    help="Users registered for the current event  [default: 80% of the users]",
)
@click.option("--seed", default=1, show_default=True, type=int)
@click.option("--if-empty", is_flag=True, help="Do nothing (and succeed) if there is data.")
@json_option
@pass_context
def demo(
    context: Context,
    users: int,
    volunteers: int,
    registrations: int | None,
    seed: int,
    if_empty: bool,
    as_json: bool,
) -> None:
    """Fill an empty database with realistic synthetic data."""
    from regdesk.demo import DemoNotEmpty, load_demo

    try:
        result = load_demo(
            context.migrated_engine,
            users=users,
            volunteers=volunteers,
            registrations=registrations,
            seed=seed,
            currency=context.settings.currency,
            actor=Actor.command_line(),
        )
    except DemoNotEmpty as exc:
        if if_empty:
            emit(as_json, {"skipped": True, "reason": str(exc)}, f"demo skipped: {exc}")
            return
        raise click.ClickException(str(exc)) from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    emit(as_json, result.as_json(), result.summary())
