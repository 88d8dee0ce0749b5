"""`regdesk apps`: OAuth applications (clients), registered and managed by the organizer."""

from __future__ import annotations

import sys
from typing import Any

import click

from regdesk.audit.service import Actor
from regdesk.cli import Command, Context, emit, json_option, main, pass_context
from regdesk.formats import format_timestamp
from regdesk.oauth import applications as apps_service
from regdesk.oauth.models import Application


def application_document(application: Application, secret: str | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"client_id": str(application.id)}
    if secret is not None:
        document["client_secret"] = secret
    document.update(
        name=application.name,
        description=application.description,
        redirect_uris=list(application.redirect_uris),
        obo_scopes=application.obo_scopes,
        service_scopes=application.service_scopes,
        post_logout_redirect_uris=list(application.post_logout_redirect_uris),
        id_token_alg=application.id_token_alg,
        suspended=application.suspended,
        created_at=format_timestamp(application.created_at),
        updated_at=format_timestamp(application.updated_at),
    )
    return document


def application_text(application: Application, secret: str | None = None) -> str:
    lines = [
        f"client_id:      {application.id}",
        f"name:           {application.name}",
        f"description:    {application.description or '-'}",
        f"redirect URIs:  {' '.join(application.redirect_uris) or '-'}",
        f"OBO scopes:     {application.obo_scopes or '-'}",
        f"service scopes: {application.service_scopes or '-'}",
        f"logout URIs:    {' '.join(application.post_logout_redirect_uris) or '-'}",
        f"ID token alg:   {application.id_token_alg}",
        f"suspended:      {'yes' if application.suspended else 'no'}",
    ]
    if secret is not None:
        lines.insert(1, f"client_secret:  {secret}   (shown this once: keep it now)")
    return "\n".join(lines)


def application_options(command: Command) -> Command:
    for decorator in reversed(
        [
            click.option("--description"),
            click.option("--redirect-uri", "redirect_uris", multiple=True, help="Repeatable."),
            click.option("--obo-scopes", help='Scopes users may grant, e.g. "pii:basic".'),
            click.option(
                "--service-scopes", help="Scopes for client_credentials, space-separated."
            ),
            click.option(
                "--post-logout-redirect-uri",
                "post_logout_redirect_uris",
                multiple=True,
                help="Where /oauth/end-session may send users back to. Repeatable.",
            ),
            click.option(
                "--id-token-alg",
                type=click.Choice(apps_service.ID_TOKEN_ALGORITHMS),
                help="How its ID tokens are signed (OpenID Connect); RS256 unless given.",
            ),
        ]
    ):
        command = decorator(command)
    return command


@main.group()
def apps() -> None:
    """OAuth applications (clients)."""


@apps.command("create")
@click.option("--name", required=True)
@application_options
@click.option("--client-id", type=click.IntRange(1), help="Keep an id tools already hold.")
@click.option("--client-secret", help="Keep a secret tools already hold; '-' reads stdin.")
@json_option
@pass_context
def apps_create(
    context: Context,
    name: str,
    description: str | None,
    redirect_uris: tuple[str, ...],
    obo_scopes: str | None,
    service_scopes: str | None,
    post_logout_redirect_uris: tuple[str, ...],
    id_token_alg: str | None,
    client_id: int | None,
    client_secret: str | None,
    as_json: bool,
) -> None:
    """Register an application; its secret is printed this once."""
    if client_secret == "-":
        client_secret = sys.stdin.readline().strip()
    with context.writing() as session:
        application, secret = apps_service.create_application(
            session,
            Actor.command_line(),
            name=name,
            description=description or "",
            redirect_uris=redirect_uris,
            obo_scopes=obo_scopes or "",
            service_scopes=service_scopes or "",
            client_id=client_id,
            client_secret=client_secret,
            post_logout_redirect_uris=post_logout_redirect_uris,
            id_token_alg=id_token_alg or apps_service.DEFAULT_ID_TOKEN_ALG,
        )
    emit(as_json, application_document(application, secret), application_text(application, secret))


@apps.command("list")
@json_option
@pass_context
def apps_list(context: Context, as_json: bool) -> None:
    """Every registered application."""
    with context.reading() as session:
        found = apps_service.list_applications(session)
    text = "\n".join(f"{a.id:>6}  {'SUSPENDED ' if a.suspended else ''}{a.name}" for a in found)
    emit(
        as_json,
        {"applications": [application_document(a) for a in found]},
        text or "no applications yet",
    )


@apps.command("show")
@click.argument("client_id", type=int)
@json_option
@pass_context
def apps_show(context: Context, client_id: int, as_json: bool) -> None:
    """One application."""
    with context.reading() as session:
        application = apps_service.get_application(session, client_id)
    emit(as_json, application_document(application), application_text(application))


@apps.command("update")
@click.argument("client_id", type=int)
@click.option("--name")
@application_options
@click.option("--clear-redirect-uris", is_flag=True, help="Remove every redirect URI.")
@click.option(
    "--clear-post-logout-redirect-uris", is_flag=True, help="Remove every post-logout URI."
)
@json_option
@pass_context
def apps_update(
    context: Context,
    client_id: int,
    name: str | None,
    description: str | None,
    redirect_uris: tuple[str, ...],
    obo_scopes: str | None,
    service_scopes: str | None,
    post_logout_redirect_uris: tuple[str, ...],
    id_token_alg: str | None,
    clear_redirect_uris: bool,
    clear_post_logout_redirect_uris: bool,
    as_json: bool,
) -> None:
    """Change what is given. New scopes make users authorize the application again."""
    if clear_redirect_uris and redirect_uris:
        raise click.UsageError("--clear-redirect-uris and --redirect-uri exclude each other")
    if clear_post_logout_redirect_uris and post_logout_redirect_uris:
        raise click.UsageError(
            "--clear-post-logout-redirect-uris and --post-logout-redirect-uri exclude each other"
        )
    logout_uris = list(post_logout_redirect_uris) or None
    with context.writing() as session:
        application = apps_service.update_application(
            session,
            Actor.command_line(),
            client_id,
            name=name,
            description=description,
            redirect_uris=[] if clear_redirect_uris else (list(redirect_uris) or None),
            obo_scopes=obo_scopes,
            service_scopes=service_scopes,
            post_logout_redirect_uris=[] if clear_post_logout_redirect_uris else logout_uris,
            id_token_alg=id_token_alg,
        )
    emit(as_json, application_document(application), application_text(application))


def _suspension_command(name: str, suspended: bool, help_text: str) -> None:
    @apps.command(name, help=help_text)
    @click.argument("client_id", type=int)
    @json_option
    @pass_context
    def command(context: Context, client_id: int, as_json: bool) -> None:
        with context.writing() as session:
            application = apps_service.set_suspended(
                session, Actor.command_line(), client_id, suspended
            )
        emit(as_json, application_document(application), application_text(application))


_suspension_command("suspend", True, "Suspend: its tokens stop working at once.")
_suspension_command("unsuspend", False, "Lift a suspension.")


@apps.command("rotate-secret")
@click.argument("client_id", type=int)
@json_option
@pass_context
def apps_rotate_secret(context: Context, client_id: int, as_json: bool) -> None:
    """Replace the client secret; the old one stops working at once."""
    with context.writing() as session:
        application, secret = apps_service.rotate_secret(session, Actor.command_line(), client_id)
    emit(as_json, application_document(application, secret), application_text(application, secret))
