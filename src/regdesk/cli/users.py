"""`regdesk users`: people (attendees, vendors, staff)."""

from __future__ import annotations

import sys

import click

from regdesk.audit.service import Actor
from regdesk.cli import Context, InvalidInput, emit, json_option, main, pass_context
from regdesk.errors import Invalid


@main.group()
def users() -> None:
    """People: attendees, vendors, staff."""


@users.command("create")
@click.option("--username", required=True)
@click.option("--email", required=True)
@click.option("--first-name", required=True)
@click.option("--last-name", required=True)
@click.option("--password", help="Omit to be asked; '-' reads it from stdin.")
@click.option("--no-password", is_flag=True, help="No password: the user cannot log in yet.")
@click.option("--role", "roles", multiple=True, help="Role name (repeatable).")
@click.option("--permission", "permissions", multiple=True, help="e.g. admin (repeatable).")
@json_option
@pass_context
def users_create(
    context: Context,
    username: str,
    email: str,
    first_name: str,
    last_name: str,
    password: str | None,
    no_password: bool,
    roles: tuple[str, ...],
    permissions: tuple[str, ...],
    as_json: bool,
) -> None:
    """Create a user."""
    from regdesk.oauth.permissions import permissions_of
    from regdesk.users.service import NewUser, create_user

    if password == "-":
        password = sys.stdin.readline().rstrip("\n")
    elif password is None and not no_password:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True, err=True)
    if password is not None:
        from regdesk.accounts.password_rule import password_problem

        problem = password_problem(password, username=username, email=email)
        if problem is not None:
            raise InvalidInput(Invalid({"password": problem}))
    with context.writing() as session:
        new = NewUser(username, email, first_name, last_name, password, roles, permissions)
        user = create_user(session, Actor.command_line(), new)
        document = {
            "id": str(user.id),
            "username": user.username,
            "email": user.email,
            "firstName": user.first_name,
            "lastName": user.last_name,
            "roles": list(dict.fromkeys(roles)),
            "permissions": permissions_of(session, user.id),
            "hasPassword": user.password_hash is not None,
        }
    emit(as_json, document, f"created user {user.username} (id {user.id})")


@users.command("reset-2fa")
@click.argument("user")
@json_option
@pass_context
def users_reset_2fa(context: Context, user: str, as_json: bool) -> None:
    """Remove every second factor and recovery code of USER (a username or e-mail address):
    for an organizer helping someone who lost them all. The user is mailed."""
    from regdesk.accounts.factors import reset_second_factors
    from regdesk.users.service import find_by_login

    with context.writing() as session:
        found = find_by_login(session, user)
        if found is None:
            raise click.ClickException(f"no user goes by {user!r}")
        removed = reset_second_factors(
            session, Actor.command_line(), found, site=context.settings.issuer
        )
        document = {"id": str(found.id), "username": found.username, "factorsRemoved": removed}
    emit(
        as_json,
        document,
        f"removed {removed} second factor{'s' if removed != 1 else ''} and every recovery code "
        f"of {found.username} (id {found.id}); they were mailed",
    )
