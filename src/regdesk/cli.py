"""The `regdesk` command (operator.md, Command line): parses, then calls services. No SQL here.

Every command that creates or reads records takes `--json` and then prints exactly one JSON
document on stdout; errors go to stderr with a non-zero exit status.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import ValidationError
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.config import Settings, load_settings
from regdesk.db import make_engine, read_session, write_session
from regdesk.formats import format_timestamp
from regdesk.oauth import applications as apps_service
from regdesk.oauth.models import Application

F = TypeVar("F", bound=Callable[..., Any])


class Context:
    """What every command shares: the settings and, when asked for, a migrated database."""

    def __init__(self, overrides: dict[str, Any]) -> None:
        from regdesk import documents
        from regdesk.models import DOCUMENTS

        self.overrides = {k: v for k, v in overrides.items() if v is not None}
        documents.install(DOCUMENTS)  # every write keeps the record documents in step

    @cached_property
    def settings(self) -> Settings:
        try:
            return load_settings(**self.overrides)
        except ValidationError as exc:
            problems = "; ".join(
                f"REGDESK_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
            )
            raise click.ClickException(f"configuration: {problems}") from None

    @cached_property
    def engine(self) -> Engine:
        """The database, its schema brought up to date first."""
        from regdesk.migrations.runner import upgrade

        engine = make_engine(self.settings.database_url)
        upgrade(engine)
        return engine

    def close(self) -> None:
        if "engine" in self.__dict__:
            self.engine.dispose()

    @contextmanager
    def writing(self) -> Iterator[Session]:
        with translate_errors(), write_session(self.engine) as session:
            yield session

    @contextmanager
    def reading(self) -> Iterator[Session]:
        with translate_errors(), read_session(self.engine) as session:
            yield session


@contextmanager
def translate_errors() -> Iterator[None]:
    """Errors a service raises for bad input become a message on stderr and exit status 1."""
    from regdesk.users.service import UserError

    try:
        yield
    except (apps_service.ApplicationError, apps_service.ApplicationNotFound, UserError) as exc:
        raise click.ClickException(str(exc)) from None


pass_context = click.make_pass_decorator(Context)


def json_option(command: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(command)


def emit(as_json: bool, document: Any, text: str) -> None:
    if as_json:
        click.echo(json.dumps(document, ensure_ascii=False, indent=2))
    else:
        click.echo(text)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--database-url", help="Default sqlite:///./regdesk.sqlite3 [REGDESK_DATABASE_URL]")
@click.option("--secret-key", help="Signs cursors and sessions [REGDESK_SECRET_KEY]")
@click.option(
    "--access-token-ttl", type=int, help="Seconds, default 3600 [REGDESK_ACCESS_TOKEN_TTL]"
)
@click.option("--rate-limits", type=click.Choice(["on", "off"]), help="[REGDESK_RATE_LIMITS]")
@click.option(
    "--access-log", type=click.Choice(["on", "off"]), help="A line per request [REGDESK_ACCESS_LOG]"
)
@click.option(
    "--default-phone-region",
    help="Region of phones without +country [REGDESK_DEFAULT_PHONE_REGION]",
)
@click.option(
    "--public-url",
    help="The address clients use, e.g. https://reg.example.org [REGDESK_PUBLIC_URL]",
)
@click.option(
    "--trusted-proxies",
    help="Addresses or networks of TLS-terminating proxies [REGDESK_TRUSTED_PROXIES]",
)
@click.version_option(package_name="regdesk")
@click.pass_context
def main(ctx: click.Context, /, **options: Any) -> None:
    """regdesk: registration and OAuth 2.0 provider for fan conventions."""
    # Each global option is also the environment variable REGDESK_<NAME> (operator.md).
    ctx.obj = Context(options)
    ctx.call_on_close(ctx.obj.close)


# --- serving -------------------------------------------------------------------------------


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64))
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="PEM certificate")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="PEM private key")
@pass_context
def serve(
    context: Context,
    host: str,
    port: int,
    workers: int,
    tls_cert: str | None,
    tls_key: str | None,
) -> None:
    """Bring the schema up to date, then serve the API and pages."""
    import uvicorn

    from regdesk.db.instance import instance_secret_key
    from regdesk.transport import tls_context

    if bool(tls_cert) != bool(tls_key):
        raise click.UsageError("--tls-cert and --tls-key go together")
    if context.settings.public_url is None:
        # decisions.md, Transport: the issuer never comes from a request's Host header.
        context.overrides["public_url"] = listening_url(host, port, tls=bool(tls_cert))
    else:
        warn_of_a_proxy_not_trusted(context.settings, host)
    # Migrate and settle the secret key once, here, before any worker starts.
    instance_secret_key(context.engine, context.settings.secret_key)
    context.engine.dispose()
    # Workers build their app from the environment: hand them this command's options.
    for name, value in context.overrides.items():
        os.environ[f"REGDESK_{name.upper()}"] = str(value)
    uvicorn.run(
        "regdesk.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        ssl_certfile=tls_cert,
        ssl_keyfile=tls_key,
        ssl_context_factory=tls_context if tls_cert else None,
        proxy_headers=False,
        server_header=False,
        log_level="info",
        access_log=context.settings.access_log == "on",
    )


def listening_url(host: str, port: int, *, tls: bool) -> str:
    """The public URL of a server on loopback: the address it listens on."""
    from regdesk.transport import is_loopback

    name = f"[{host}]" if ":" in host else host
    if not is_loopback(name) or port == 0:
        raise click.UsageError(
            f"serving on {host}:{port} needs the address clients use: set REGDESK_PUBLIC_URL "
            "(or --public-url), e.g. https://reg.example.org"
        )
    return f"{'https' if tls else 'http'}://{name}:{port}"


def warn_of_a_proxy_not_trusted(settings: Settings, host: str) -> None:
    """A public https address served on loopback is a proxy in front: without trusting it,
    requests look like plain HTTP, so cookies lose `Secure` and HSTS is not sent."""
    from urllib.parse import urlsplit

    from regdesk.transport import is_loopback

    public = urlsplit(settings.public_url or "")
    if (
        public.scheme == "https"
        and not is_loopback(public.hostname or "")
        and is_loopback(host)
        and not settings.trusted_proxies
    ):
        click.echo(
            "warning: REGDESK_PUBLIC_URL is https but no proxy is trusted: set "
            "REGDESK_TRUSTED_PROXIES=127.0.0.1 so that the proxy's X-Forwarded-Proto is believed",
            err=True,
        )


@main.group()
def db() -> None:
    """The database schema."""


@db.command("upgrade")
@pass_context
def db_upgrade(context: Context) -> None:
    """Migrate the schema to the newest revision (Alembic)."""
    from regdesk.migrations.runner import current_revision

    click.echo(f"schema at revision {current_revision(context.engine)}")


@db.command("revision")
@click.option("-m", "--message", required=True, help="What the change is, in a few words.")
@pass_context
def db_revision(context: Context, message: str) -> None:
    """For developers: write a migration for what the models changed (review it!)."""
    from regdesk.migrations.runner import new_revision

    new_revision(context.engine, message)


# --- data ----------------------------------------------------------------------------------


@main.command()
@click.option("--users", default=1000, show_default=True, type=click.IntRange(0))
@click.option("--volunteers", default=200, show_default=True, type=click.IntRange(0))
@click.option("--seed", default=1, show_default=True, type=int)
@click.option("--if-empty", is_flag=True, help="Do nothing (and succeed) if there is data.")
@json_option
@pass_context
def demo(
    context: Context, users: int, volunteers: int, seed: int, if_empty: bool, as_json: bool
) -> None:
    """Fill an empty database with realistic synthetic data."""
    from regdesk.transfer.demo import DemoNotEmpty, load_demo

    try:
        result = load_demo(
            context.engine,
            users=users,
            volunteers=volunteers,
            seed=seed,
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


@main.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
@pass_context
def import_(context: Context, file: Path, as_json: bool) -> None:
    """Import a JSON document (or a CSV of users): all or nothing, and idempotent."""
    from regdesk.transfer.importer import ImportRejected, import_document, read_document

    try:
        document = read_document(file)
        result = import_document(
            context.engine,
            document,
            actor=Actor.command_line(),
            phone_region=context.settings.default_phone_region,
        )
    except ImportRejected as exc:
        raise click.ClickException(f"{file}: nothing was imported.\n{exc}") from None
    emit(as_json, result.as_json(), result.summary())


@main.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@pass_context
def export(context: Context, file: Path | None) -> None:
    """Write every record as the import document (to FILE, or to stdout)."""
    from regdesk.transfer.exporter import document_text, export_document

    text = document_text(export_document(context.engine))
    if file is None:
        sys.stdout.write(text)
        return
    _write_private_file(file, text)
    click.echo(f"exported to {file}", err=True)


def _write_private_file(path: Path, text: str) -> None:
    """Readable by its owner only (it holds personal data), and never left half-written."""
    fd, temporary = tempfile.mkstemp(dir=path.parent or Path("."), prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


# --- users ---------------------------------------------------------------------------------


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


# --- tokens ------------------------------------------------------------------------------


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

    counts: dict[str, int] = purge(context.engine, batch=batch_size).as_json()
    with context.writing() as session:
        counts["webSessions"] = purge_sessions(session)
    emit(as_json, counts, "purged: " + ", ".join(f"{n} {kind}" for kind, n in counts.items()))


# --- OAuth applications --------------------------------------------------------------------


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
        f"suspended:      {'yes' if application.suspended else 'no'}",
    ]
    if secret is not None:
        lines.insert(1, f"client_secret:  {secret}   (shown this once: keep it now)")
    return "\n".join(lines)


def application_options(command: F) -> F:
    for decorator in reversed(
        [
            click.option("--description"),
            click.option("--redirect-uri", "redirect_uris", multiple=True, help="Repeatable."),
            click.option("--obo-scopes", help='Scopes users may grant, e.g. "pii:basic".'),
            click.option(
                "--service-scopes", help="Scopes for client_credentials, space-separated."
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
    clear_redirect_uris: bool,
    as_json: bool,
) -> None:
    """Change what is given. New scopes make users authorize the application again."""
    if clear_redirect_uris and redirect_uris:
        raise click.UsageError("--clear-redirect-uris and --redirect-uri exclude each other")
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


# --- the audit trail -----------------------------------------------------------------------


class Moment(click.ParamType[dt.datetime, Any]):
    """An ISO date (`2026-07-04`) or date and time (`2026-07-04T18:30`, UTC unless it says)."""

    name = "date"

    def __init__(self, *, end_of_day: bool) -> None:
        self.end_of_day = end_of_day  # --until DATE takes in the whole of that day

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> dt.datetime:
        if isinstance(value, dt.datetime):
            return value
        text = str(value).strip()
        try:
            if len(text) == len("2026-07-04"):
                day = dt.date.fromisoformat(text)
                moment = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
                return moment + dt.timedelta(days=1) if self.end_of_day else moment
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            self.fail(f"{text!r} is not an ISO date (2026-07-04) or date and time", param, ctx)
        return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment


def audit_target(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    kind, _, identifier = value.partition(":")
    if not kind.strip() or not identifier.strip():
        raise click.BadParameter(f"{value!r} is not TYPE:ID (for example application:3)")
    return kind.strip(), identifier.strip()


def audit_event_document(event: AuditEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "occurred_at": format_timestamp(event.occurred_at),
        "action": event.action,
        "actor": event.actor,
        "actor_user_id": event.actor_user_id,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "ip_address": event.ip_address,
        "details": event.details,
    }


def audit_event_text(event: AuditEvent) -> str:
    target = f"{event.target_type}:{event.target_id}" if event.target_type else "-"
    details = json.dumps(event.details, ensure_ascii=False, sort_keys=True) if event.details else ""
    return "  ".join(
        (
            format_timestamp(event.occurred_at),
            f"{event.action:<26}",
            f"{event.actor:<14}",
            f"{target:<16}",
            f"{event.ip_address or '-':<15}",
            details,
        )
    ).rstrip()


@main.command()
@click.option("--action", "actions", multiple=True, help="e.g. user.login_failed (repeatable).")
@click.option("--actor", help="Who acted, as the log writes it: user:17, cli:alice, app:3.")
@click.option("--target", callback=audit_target, help="What was acted on: TYPE:ID.")
@click.option("--user", "user_id", type=click.IntRange(1), help="Events by or about this user id.")
@click.option("--since", type=Moment(end_of_day=False), help="From this date or time (UTC).")
@click.option("--until", type=Moment(end_of_day=True), help="Up to this date (inclusive) or time.")
@click.option("--before", "before_id", type=click.IntRange(1), help="Events older than this id.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10000))
@json_option
@pass_context
def audit(
    context: Context,
    actions: tuple[str, ...],
    actor: str | None,
    target: tuple[str, str] | None,
    user_id: int | None,
    since: dt.datetime | None,
    until: dt.datetime | None,
    before_id: int | None,
    limit: int,
    as_json: bool,
) -> None:
    """The audit trail, newest first: sign-ins, grants, revocations, changes of records."""
    from regdesk.audit.service import search_events

    if since is not None and until is not None and since >= until:
        raise click.UsageError("--since must come before --until")
    with context.reading() as session:
        page = search_events(
            session,
            actions=actions,
            actor=actor,
            user_id=user_id,
            target_type=target[0] if target else None,
            target_id=target[1] if target else None,
            since=since,
            until=until,
            before_id=before_id,
            limit=limit,
        )
    lines = [audit_event_text(event) for event in page.events] or ["no events"]
    if page.older is not None:
        lines.append(f"(older events: --before {page.older})")
    emit(
        as_json,
        {
            "events": [audit_event_document(event) for event in page.events],
            "older": page.older,
        },
        "\n".join(lines),
    )
