"""The `regdesk` command (operator.md, Command line): parses, then calls services. No SQL here.

Every command that creates or reads records takes `--json` and then prints exactly one JSON
document on stdout; errors go to stderr with a non-zero exit status. This module holds the
`main` group and what every command shares; each command group is a module of this package.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import IO, Any, TypeVar

import click
from pydantic import ValidationError
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from regdesk.config import Settings, load_settings
from regdesk.db import make_engine, read_session, write_session
from regdesk.errors import Invalid
from regdesk.keys import install as install_secret_key
from regdesk.migrations.revisions import SchemaState, schema_state
from regdesk.migrations.runner import upgrade
from regdesk.oauth.applications import ApplicationNotFound

Command = TypeVar("Command", bound=Callable[..., Any])


class Context:
    """What every command shares: the settings and, when asked for, the database, one of two
    ways: migrated first for a command that writes, or left as it is for one that only reads."""

    def __init__(self, overrides: dict[str, Any]) -> None:
        from regdesk import documents
        from regdesk.models import DOCUMENTS
        from regdesk.webhooks import capture

        self.overrides = {k: v for k, v in overrides.items() if v is not None}
        documents.install(DOCUMENTS)  # every write keeps the record documents in step
        capture.install()  # and writes the webhook events of what it changed

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
    def _database(self) -> Engine:
        return make_engine(self.settings.database_url)

    @cached_property
    def migrated_engine(self) -> Engine:
        """The database, its schema brought up to date first: for commands that write."""
        upgrade(self._database)
        self._install_secret_key()
        return self._database

    @cached_property
    def read_only_engine(self) -> Engine:
        """The database as it is, for commands that only read, which never change a database,
        its schema included (operator.md, Command line): refused unless its schema is current."""
        state = schema_state(self._database)
        if not state.is_current:
            raise click.ClickException(schema_not_current(self.settings.database_url, state))
        self._install_secret_key()
        return self._database

    def _install_secret_key(self) -> None:
        """What is kept encrypted (signing keys, mail) is keyed by the instance secret, as the
        app's: the configured one (REGDESK_SECRET_KEY, --secret-key), else the one the database
        keeps, read (or made) in the transaction that needs it (keys.store.instance_secret)."""
        if self.settings.secret_key:
            install_secret_key(self._database, self.settings.secret_key)

    def close(self) -> None:
        if "_database" in self.__dict__:
            self._database.dispose()

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A transaction for a command that writes (the schema migrated first)."""
        with translate_errors(), write_session(self.migrated_engine) as session:
            yield session

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """A read for a command that only reads (`apps list`, `audit`...): nothing migrated."""
        with translate_errors(), read_session(self.read_only_engine) as session:
            yield session


def schema_not_current(database_url: str, state: SchemaState) -> str:
    database = make_url(database_url).render_as_string(hide_password=True)
    if not state.known:
        return (
            f"the database {database} is at schema revision {state.current}, which this "
            f"regdesk does not know (it needs {state.head}): a newer regdesk migrated it. "
            "Nothing was changed."
        )
    if state.current is None:
        where = "has no schema yet"
    else:
        where = f"is at schema revision {state.current}"
    return (
        f"the database {database} {where}; this regdesk needs revision {state.head}. "
        "Run `regdesk db upgrade`, then this command again (it only reads: nothing was changed)."
    )


class InvalidInput(click.ClickException):
    """A service's `Invalid`: one line per field on stderr (`username: 'fox' is taken`)."""

    def __init__(self, invalid: Invalid) -> None:
        super().__init__(str(invalid))
        self.lines = invalid.lines()

    def show(self, file: IO[Any] | None = None) -> None:
        for line in self.lines:
            click.echo(f"Error: {line}", file=file, err=True)


@contextmanager
def translate_errors() -> Iterator[None]:
    """Errors a service raises for bad input become a message on stderr and exit status 1."""
    try:
        yield
    except Invalid as invalid:
        raise InvalidInput(invalid) from None
    except ApplicationNotFound as exc:
        raise click.ClickException(str(exc)) from None


pass_context = click.make_pass_decorator(Context)


def json_option(command: Command) -> Command:
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
    "--keep-alive-seconds",
    type=int,
    help="Idle seconds before a connection is closed, default 5 [REGDESK_KEEP_ALIVE_SECONDS]",
)
@click.option(
    "--default-phone-region",
    help="Region of phones without +country [REGDESK_DEFAULT_PHONE_REGION]",
)
@click.option(
    "--currency",
    help="ISO 4217 code of prices and orders, default USD [REGDESK_CURRENCY]",
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


# The command groups register themselves on `main` as they are imported.
from regdesk.cli import apps as apps  # noqa: E402
from regdesk.cli import audit as audit  # noqa: E402
from regdesk.cli import backups as backups  # noqa: E402
from regdesk.cli import db as db  # noqa: E402
from regdesk.cli import demo as demo  # noqa: E402
from regdesk.cli import keys as keys  # noqa: E402
from regdesk.cli import mail as mail  # noqa: E402
from regdesk.cli import serve as serve  # noqa: E402
from regdesk.cli import tokens as tokens  # noqa: E402
from regdesk.cli import transfer as transfer  # noqa: E402
from regdesk.cli import users as users  # noqa: E402
from regdesk.cli import webhooks as webhooks  # noqa: E402
