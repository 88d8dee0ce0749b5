"""Every knob of regdesk, with its environment variable and default (operator.md, Configuration).

Each setting is read from `REGDESK_<NAME>`; the command line passes its `--options` as
overrides, so an option beats the environment, which beats the default.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from typing import Literal
from urllib.parse import urlsplit

from babel.numbers import list_currencies
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from regdesk.mail.smtp import SmtpServer
from regdesk.transport import is_loopback

DEFAULT_DATABASE_URL = "sqlite:///./regdesk.sqlite3"
# The issuer when REGDESK_PUBLIC_URL is unset: `regdesk serve` sets the address it listens on
# instead; an app built without either (tests, a bare uvicorn) still has a stable one.
DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REGDESK_", frozen=True, extra="forbid")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """What the caller passes, then the environment: nothing else. The settings' files
        (deploy/regdesk.env) are read by what starts regdesk (systemd, a shell), and pydantic's
        own .env and secrets-folder sources, with no file named, found nothing, at a cost: the
        .env source walked every field again (load_settings 0.94 -> 0.49 ms)."""
        return init_settings, env_settings

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy-style URL; sqlite:///path or postgresql://user@host:5432/db.",
    )
    secret_key: str | None = Field(
        default=None,
        description="Signs cursors and sessions. Unset: generated once and kept in the database.",
    )
    access_token_ttl: int = Field(
        default=3600, ge=60, le=86400, description="Access-token lifetime in seconds."
    )
    rate_limits: Literal["on", "off"] = Field(
        default="on", description="'off' disables every rate limit (benchmarks, load tests)."
    )
    access_log: Literal["on", "off"] = Field(
        default="on",
        description="'off' leaves request logging to the proxy in front (a line per request "
        "costs the server about a tenth of its throughput).",
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="'json': every log line, the access log's included, is one JSON object "
        "carrying the request's id (X-Request-ID); 'text': plain lines.",
    )
    metrics_address: str | None = Field(
        default=None,
        description="host:port where `regdesk serve` answers Prometheus's scrapes of /metrics "
        "(e.g. 127.0.0.1:9100), without a token: a private address. Unset: no such listener.",
    )
    metrics_token: str | None = Field(
        default=None,
        description="A bearer token (at least 32 characters) that opens /metrics on the main "
        "port. Unset: /metrics there answers 404.",
    )
    keep_alive_seconds: int = Field(
        default=5,
        ge=1,
        le=3600,
        description="Seconds a connection may sit idle between requests before the server "
        "closes it. Behind a proxy that keeps its connections to regdesk open, set it above "
        "the proxy's idle timeout, or the proxy may send a request on a connection regdesk is "
        "closing (and answer its client 502).",
    )
    redis_url: str | None = Field(
        default=None,
        description="redis://host:6379/0: rate-limit counters shared by every process and "
        "host. Unset: counters in each process's memory (one process only).",
    )
    api_rate_limit: str = Field(
        default="1200/minute",
        description="Requests per client on the API, in the `limits` notation (N/second, "
        "N/minute, N/hour; several separated by ';').",
    )
    token_rate_limit: str = Field(
        default="1200/minute",
        description="Token requests per client. At least the API's own limit, so a client "
        "that fetches a token for every lookup works (decisions.md, Limits).",
    )
    token_failure_rate_limit: str = Field(
        default="100/minute",
        description="Token, revocation and introspection requests whose client fails to "
        "authenticate, per sender address; past it, that address is refused before its "
        "credentials are checked. Only authenticated requests count against a client.",
    )
    login_rate_limit: str = Field(
        default="120/minute",
        description="Login form submissions per client address (a venue's Wi-Fi is one "
        "address for hundreds of attendees).",
    )
    trusted_proxies: str = Field(
        default="",
        description="Comma-separated addresses or networks of reverse proxies whose "
        "X-Forwarded-For and X-Forwarded-Proto are believed.",
    )
    public_url: str | None = Field(
        default=None,
        description="The address clients use (https://reg.example.org): the OAuth issuer, "
        "and the only host name requests may name. Required to serve beyond loopback; unset, "
        "`regdesk serve` uses the loopback address it listens on.",
    )
    refresh_token_idle_ttl: int = Field(
        default=0,
        ge=0,
        description="Seconds a refresh token may lie unused before it dies; 0: never (api.md).",
    )
    default_phone_region: str = Field(
        default="US",
        description="ISO 3166-1 region used to read phone numbers written without '+country'.",
    )

    currency: str = Field(
        default="USD",
        description="ISO 4217 code of the one currency every price and order is in; amounts "
        "are kept in its minor units (cents for USD, yen for JPY).",
    )
    payment_instructions: str = Field(
        default="",
        description="What an attendee with an unpaid order reads on /register: how to pay "
        "(a bank transfer's details, 'pay at the desk'), as plain text.",
    )
    registration_edits_until: dt.datetime | None = Field(
        default=None,
        description="When attendees stop being able to change their badge name and options "
        "on /register (ISO 8601, e.g. 2027-06-01T00:00:00Z); unset: until the event.",
    )

    smtp_url: str | None = Field(
        default=None,
        description="The mail server: smtp://user:password@host:587 (STARTTLS) or "
        "smtps://user:password@host:465 (TLS). Unset: mail stays in the outbox, shown by "
        "`regdesk mail list` and the admin area.",
    )
    mail_from: str = Field(
        default="regdesk@localhost",
        description="The From address of every message regdesk sends.",
    )
    signup: Literal["open", "closed"] = Field(
        default="open",
        description="Whether people may make their own account at /signup.",
    )
    staff_2fa: Literal["optional", "required"] = Field(
        default="optional",
        description="required: a user holding admin or a sensitive permission must add a "
        "second factor before the admin area or a consent to a sensitive scope works for them.",
    )
    webhooks_allow_private: Literal["on", "off"] = Field(
        default="off",
        description="'on' lets webhook endpoints be private addresses (loopback, private, "
        "link-local), and plain http on loopback: for tests and single-host setups.",
    )
    outbox_poll_seconds: float = Field(
        default=5.0,  # outbox/runner.py's POLL, which a test holds equal
        gt=0,
        le=3600,
        description="Seconds between a server's looks at the outbox for what fell due without "
        "a commit of its own to wake it: retries, and mail and webhook events written by other "
        "processes. Lower sends those sooner, for a query per look.",
    )
    key_overlap: dt.timedelta = Field(
        default=dt.timedelta(days=7),
        description="How long a retired signing key stays published after `regdesk keys "
        "rotate` (an ISO 8601 duration: P7D, PT12H), so what it signed just before still verifies.",
    )
    terms_url: str | None = Field(
        default=None,
        description="The organizer's terms (https://...): when set, /signup asks people to "
        "agree to them.",
    )

    @field_validator("smtp_url")
    @classmethod
    def _smtp_url_is_usable(cls, value: str | None) -> str | None:
        if value:
            SmtpServer.from_url(value)  # SmtpUrlError (a ValueError) says what is wrong
        return value or None

    @field_validator("terms_url")
    @classmethod
    def _terms_url_is_a_web_address(cls, value: str | None) -> str | None:
        if value and urlsplit(value).scheme not in ("https", "http"):
            raise ValueError("must be a web address (https://...)")
        return value or None

    @field_validator("currency")
    @classmethod
    def _currency_is_iso_4217(cls, value: str) -> str:
        code = value.strip().upper()
        if code not in _currencies():
            raise ValueError(f"REGDESK_CURRENCY {value!r} is not an ISO 4217 currency code")
        return code

    @field_validator("registration_edits_until")
    @classmethod
    def _edits_until_has_a_zone(cls, value: dt.datetime | None) -> dt.datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError(
                "REGDESK_REGISTRATION_EDITS_UNTIL needs a time zone: 2027-06-01T00:00:00Z"
            )
        return value.astimezone(dt.UTC) if value is not None else None

    @field_validator("secret_key")
    @classmethod
    def _secret_key_is_strong(cls, value: str | None) -> str | None:
        if value is not None and len(value) < 32:
            raise ValueError("REGDESK_SECRET_KEY must be at least 32 characters long")
        return value

    @field_validator("metrics_address")
    @classmethod
    def _metrics_address_is_host_and_port(cls, value: str | None) -> str | None:
        if value:
            listen_address(value)  # ValueError says what is wrong
        return value or None

    @field_validator("metrics_token")
    @classmethod
    def _metrics_token_is_strong(cls, value: str | None) -> str | None:
        if value and len(value) < 32:
            raise ValueError("REGDESK_METRICS_TOKEN must be at least 32 characters long")
        return value or None

    @field_validator("public_url")
    @classmethod
    def _public_url_is_an_origin(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return public_origin(value)

    @field_validator("default_phone_region")
    @classmethod
    def _region_is_alpha2(cls, value: str) -> str:
        if len(value) != 2 or not value.isalpha():
            raise ValueError("REGDESK_DEFAULT_PHONE_REGION must be an ISO 3166-1 alpha-2 code")
        return value.upper()

    @property
    def issuer(self) -> str:
        """The OAuth issuer (RFC 8414, RFC 9207 `iss`): never taken from a request."""
        return self.public_url or DEFAULT_PUBLIC_URL

    @property
    def allowed_hosts(self) -> frozenset[str] | None:
        """The `Host` values requests may carry (host, or host:port); None: any (no public URL
        set). A loopback public URL also answers to the other loopback names, same port."""
        if self.public_url is None:
            return None
        parts = urlsplit(self.public_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.netloc.rpartition(":")[0] if parts.port else parts.netloc
        names = {host.lower()}
        if is_loopback(host):
            names.update(LOOPBACK_NAMES)
        return frozenset({*names, *(f"{name}:{port}" for name in names)})


def public_origin(value: str) -> str:
    """A public URL checked and normalised: an origin (scheme, host, port), https unless the
    host is loopback (api.md 5: every request uses HTTPS)."""
    text = value.strip().rstrip("/")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError:
        raise ValueError(f"REGDESK_PUBLIC_URL {value!r} is not a URL") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError("REGDESK_PUBLIC_URL must be an absolute address: https://reg.example.org")
    if parts.path or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(
            "REGDESK_PUBLIC_URL must be an origin only (scheme, host and port), with no path"
        )
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ValueError("REGDESK_PUBLIC_URL must use https unless its host is loopback")
    return f"{parts.scheme}://{parts.netloc.lower()}"


def listen_address(value: str) -> tuple[str, int]:
    """host:port (an IPv6 host in brackets: [::1]:9100) as a host and a port number."""
    host, _, port = value.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{value!r} is not host:port, e.g. 127.0.0.1:9100")
    return host, int(port)


@cache
def _currencies() -> frozenset[str]:
    return frozenset(list_currencies())


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment, with explicit (non-None) overrides on top."""
    given = {name: value for name, value in overrides.items() if value is not None}
    return Settings(**given)  # type: ignore[arg-type]
