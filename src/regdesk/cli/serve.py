"""`regdesk serve`: bring the schema up to date, then serve the API and pages."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from regdesk.cli import Context, main, pass_context
from regdesk.cli.setting_options import setting_options
from regdesk.config import Settings, listen_address
from regdesk.observability import multiprocess

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer


@main.command()
@setting_options  # every other setting too, from Settings itself
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
    from regdesk.db.instance import instance_secret_key

    if bool(tls_cert) != bool(tls_key):
        raise click.UsageError("--tls-cert and --tls-key go together")
    if context.settings.public_url is None:
        # decisions.md, Transport: the issuer never comes from a request's Host header.
        context.overrides["public_url"] = listening_url(host, port, tls=bool(tls_cert))
    else:
        warn_of_a_proxy_not_trusted(context.settings, host)
    # Migrate and settle the secret key once, here, before any worker starts.
    instance_secret_key(context.migrated_engine, context.settings.secret_key)
    context.migrated_engine.dispose()
    # Workers build their app from the environment: hand them this command's options.
    for name, value in context.overrides.items():
        os.environ[f"REGDESK_{name.upper()}"] = str(value)
    # The series' directory is named before the first series is made, in the mode it names
    # (observability/metrics.py, multiprocess.py); the workers inherit it.
    with multiprocess.per_server_start():
        _run(context, host, port, workers, tls_cert, tls_key)


def _run(
    context: Context, host: str, port: int, workers: int, tls_cert: str | None, tls_key: str | None
) -> None:
    """uvicorn's server, and the /metrics listener beside it when one is configured."""
    import uvicorn

    from regdesk.transport import tls_context
    from regdesk.web.access_log import log_config

    listener = metrics_listener(context.settings)
    try:
        uvicorn.run(
            "regdesk.app:serving_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            ssl_certfile=tls_cert,
            ssl_keyfile=tls_key,
            ssl_context_factory=tls_context if tls_cert else None,
            proxy_headers=False,
            server_header=False,
            ws="none",  # regdesk answers no WebSocket: its library stays unloaded (2 MB)
            timeout_keep_alive=context.settings.keep_alive_seconds,
            log_level="info",
            log_config=log_config(context.settings.log_format),
            access_log=False,  # the service writes its own (web/access_log.py), the same lines
        )
    finally:
        if listener is not None:
            listener.shutdown()


def metrics_listener(settings: Settings) -> WSGIServer | None:
    """The /metrics listener at REGDESK_METRICS_ADDRESS, a thread of this process answering
    for every worker (observability/exposition.py); None when none is configured."""
    if settings.metrics_address is None:
        return None
    from regdesk.app import OUTBOX_CHANNELS
    from regdesk.db import make_engine
    from regdesk.observability.backlog import OutboxBacklog
    from regdesk.observability.exposition import listen

    metrics_host, metrics_port = listen_address(settings.metrics_address)
    backlog = OutboxBacklog(make_engine(settings.database_url), OUTBOX_CHANNELS)
    try:
        return listen(metrics_host, metrics_port, backlog)
    except OSError as error:
        raise click.ClickException(
            f"cannot listen for /metrics on {settings.metrics_address}: {error.strerror}"
        ) from None


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
