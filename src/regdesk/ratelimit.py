"""Rate limits per client (decisions.md, Limits; operator.md, REGDESK_RATE_LIMITS).

What is counted, and against whom (a limit is charged only to whoever proved who they are,
so that nobody can spend someone else's budget):
- `api:<application id>`: every API request made with a live token of that application
  (REGDESK_API_RATE_LIMIT), counted by the bearer guard before the scope check;
- `token:<client id>`: every token, revocation and introspection request whose client
  AUTHENTICATED (REGDESK_TOKEN_RATE_LIMIT): a stranger naming the client spends nothing of it;
- `token_failure:<address>`: every such request whose client authentication FAILED, against
  the sender's address (REGDESK_TOKEN_FAILURE_RATE_LIMIT); once that is spent, requests from
  the address are refused before their credentials are checked;
- `login:<address>`: every login form submission from a browser that is not trusted for the
  account it names (REGDESK_LOGIN_RATE_LIMIT). The database-backed throttle of failed logins
  (`accounts/throttle.py`) applies as well.
An address is the client's as the transport rules see it (after trusted proxies), an IPv6
client's whole /64.
Every key lives in a namespace derived from the instance's secret key, so two deployments that
share one Redis never share a counter.

Algorithm: a moving window (`limits`' MovingWindowRateLimiter): at most N requests in ANY
period of the window's length, with no burst at window edges, and one atomic Lua script per
count in Redis. A setting may hold several limits (`10/second;1200/minute`): a request is
counted against each, and is refused when any is full. The one that decides the answer is the
refusing limit with the longest wait, or, when nothing refuses, the one with the fewest
requests left.

Counters live in this process's memory without REGDESK_REDIS_URL (so with one process only),
else in Redis, shared by every process and host. When Redis cannot be reached the limits FAIL
OPEN: the request is served without a limit (and without the headers), a warning is logged at
most once a minute, and Redis is tried again a few seconds later. An outage of the counter
store must not take registration down; the database-backed login throttle still holds.

Every counted response carries the RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset
headers (draft-ietf-httpapi-ratelimit-headers); a refusal adds Retry-After. Routes leave their
verdict on the request's state and `RateLimitHeaders` writes it on whatever answer goes out,
errors included; a 429 that a refusing verdict decided is counted there too, by the limit's
kind (regdesk_rate_limit_refusals_total at /metrics), once whichever path refused it.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from limits import RateLimitItem, parse_many
from limits.storage import Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from regdesk.config import Settings
from regdesk.observability import metrics

log = logging.getLogger("regdesk.ratelimit")

Kind = Literal["api", "token", "token_failure", "login"]

STATE_KEY = "rate_limit"  # where a route leaves its Verdict, in the request's state
KEY_PREFIX = "regdesk"  # every Redis key starts with it
# An unreachable Redis costs one failed attempt per process per STORE_RETRY_SECONDS, not one
# per request. A Redis on the same network answers in well under a millisecond.
STORE_RETRY_SECONDS = 5.0
WARNING_INTERVAL_SECONDS = 60.0


def redis_options() -> dict[str, Any]:
    """How the counters' Redis client connects. Made when a process is given a Redis: redis-py
    is 11 MB of a process's memory, which one that counts for itself does not carry."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return {
        "socket_connect_timeout": 0.5,
        "socket_timeout": 0.5,
        # redis-py retries a failed connection three times with backoff by default: during an
        # outage every request would wait for that. Options in the URL's query string win.
        "retry": Retry(NoBackoff(), 0),
    }


@dataclass(frozen=True)
class Verdict:
    """Where a client stands against one limit, this request counted (or refused)."""

    allowed: bool
    limit: int
    remaining: int
    reset: int  # seconds until the oldest counted request leaves the window: one more is free
    kind: Kind  # which limit: api, token, token_failure, login

    @property
    def retry_after(self) -> int:
        """Seconds to wait before trying again (meaningful when refused), at least 1."""
        return max(1, self.reset)

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
        }


def most_restrictive(verdicts: Iterable[Verdict]) -> Verdict:
    """The verdict that decides: of the refusals, the longest wait; else the fewest left."""
    every = list(verdicts)
    refused = [verdict for verdict in every if not verdict.allowed]
    if refused:
        return max(refused, key=lambda verdict: verdict.reset)
    return min(every, key=lambda verdict: (verdict.remaining, -verdict.reset))


@functools.lru_cache(maxsize=8)
def instance_namespace(secret_key: str) -> str:
    """This deployment's part of a shared Redis: every process of it agrees on the secret."""
    return hashlib.sha256(f"regdesk rate limits\0{secret_key}".encode()).hexdigest()[:16]


class RateLimits:
    """The limits of one application: a counter store and what each kind of request may do."""

    def __init__(
        self,
        storage: Storage,
        limits: Mapping[Kind, Sequence[RateLimitItem]],
        *,
        shared: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limiter = MovingWindowRateLimiter(storage)
        self.limits = dict(limits)
        self.shared = shared
        # A store in this process's memory cannot be "down": its errors are bugs, let them out.
        self._store_errors = storage.base_exceptions if shared else ()
        self._clock = clock
        self._lock = threading.Lock()
        self._down_until: float | None = None
        self._warned_at: float | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> RateLimits | None:
        """The limits the settings ask for; None when REGDESK_RATE_LIMITS is off."""
        if settings.rate_limits == "off":
            return None
        limits: dict[Kind, Sequence[RateLimitItem]] = {
            "api": _parse("REGDESK_API_RATE_LIMIT", settings.api_rate_limit),
            "token": _parse("REGDESK_TOKEN_RATE_LIMIT", settings.token_rate_limit),
            "token_failure": _parse(
                "REGDESK_TOKEN_FAILURE_RATE_LIMIT", settings.token_failure_rate_limit
            ),
            "login": _parse("REGDESK_LOGIN_RATE_LIMIT", settings.login_rate_limit),
        }
        if settings.redis_url:
            # Connecting is lazy: a Redis that is down at startup does not stop the service.
            storage = storage_from_string(
                settings.redis_url, key_prefix=KEY_PREFIX, **redis_options()
            )
            return cls(cast(Storage, storage), limits, shared=True)
        return cls(cast(Storage, storage_from_string("memory://")), limits, shared=False)

    def count(
        self, kind: Kind, names: Iterable[str], namespace: str, *, charge: bool = True
    ) -> Verdict | None:
        """Count one request of `kind` against each of `names` (a client, an address); with
        `charge` False only look: would one more be allowed?

        None when the request cannot be counted because the store is unreachable: it is then
        served without a limit (fail open).
        """
        if self._store_is_resting():
            return None
        try:
            verdicts = [
                self._hit(item, charge, kind, namespace, name)
                for name in dict.fromkeys(names)
                for item in self.limits[kind]
            ]
        except self._store_errors as error:
            self._store_failed(error)
            return None
        self._store_answered()
        return most_restrictive(verdicts)

    def _hit(
        self, item: RateLimitItem, charge: bool, kind: Kind, namespace: str, name: str
    ) -> Verdict:
        key = (namespace, kind, name)
        allowed = self.limiter.hit(item, *key) if charge else self.limiter.test(item, *key)
        reset_at, remaining = self.limiter.get_window_stats(item, *key)
        # Clamped: with Redis the timestamps come from every host's clock.
        reset = min(item.get_expiry(), max(1, math.ceil(reset_at - time.time())))
        return Verdict(allowed, item.amount, max(0, remaining), reset, kind)

    # --- fail open ---------------------------------------------------------------------------

    def _store_is_resting(self) -> bool:
        with self._lock:
            return self._down_until is not None and self._clock() < self._down_until

    def _store_failed(self, error: Exception) -> None:
        now = self._clock()
        with self._lock:
            self._down_until = now + STORE_RETRY_SECONDS
            warn = self._warned_at is None or now - self._warned_at >= WARNING_INTERVAL_SECONDS
            if warn:
                self._warned_at = now
        if warn:
            log.warning(
                "rate-limit store unreachable, requests are served WITHOUT rate limits "
                "until it answers: %s",
                error,
            )

    def _store_answered(self) -> None:
        with self._lock:
            was_down = self._down_until is not None
            self._down_until = None
            self._warned_at = None
        if was_down:
            log.warning("rate-limit store answers again: rate limits apply")


def _parse(variable: str, text: str) -> list[RateLimitItem]:
    try:
        return parse_many(text)
    except ValueError:
        raise ValueError(
            f"{variable}: {text!r} is not a rate limit such as '1200/minute' "
            "(several are separated by ';')"
        ) from None


# --- in a request ----------------------------------------------------------------------------


def count(request: Request, kind: Kind, *names: str) -> Verdict | None:
    """Count this request against `names`; the verdict also goes out as headers.

    None: not limited (REGDESK_RATE_LIMITS=off, or the store is unreachable).
    """
    return _counted(request, kind, names, charge=True)


def spent(request: Request, kind: Kind, *names: str) -> Verdict | None:
    """The refusal a request of `kind` would meet now, without counting it; None: it would be
    allowed (or nothing is limited). A refusal also goes out as headers."""
    verdict = _counted(request, kind, names, charge=False)
    return verdict if verdict is not None and not verdict.allowed else None


def _counted(request: Request, kind: Kind, names: Iterable[str], *, charge: bool) -> Verdict | None:
    limits: RateLimits | None = request.app.state.rate_limits
    if limits is None:
        return None
    namespace = instance_namespace(request.app.state.secret_key)
    verdict = limits.count(kind, names, namespace, charge=charge)
    if verdict is not None and (charge or not verdict.allowed):
        setattr(request.state, STATE_KEY, verdict)
    return verdict


def sender(request: Request) -> str:
    """The address a request's limits are counted against (see `address_key`)."""
    return address_key(request.client.host if request.client else None)


@functools.lru_cache(maxsize=4096)  # parsing it was 4 % of a token grant's time (a profile)
def address_key(address: str | None) -> str:
    """An IPv6 client's whole /64, which one subscriber usually holds; else the address as
    given (an IPv4-mapped IPv6 address as its IPv4 one)."""
    if not address:
        return "unknown"
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def verdict_of(request: Request) -> Verdict | None:
    """The verdict already counted for this request, if any."""
    verdict = getattr(request.state, STATE_KEY, None)
    return verdict if isinstance(verdict, Verdict) else None


class RateLimitHeaders:
    """Writes the verdict a route left on the request's state as RateLimit-* headers, and
    counts the refusal of an answer it decided (429)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # The same dict as `request.state` further in (Starlette creates it on first use).
        state: dict[str, Any] = scope.setdefault("state", {})

        async def send_with_headers(message: Message) -> None:
            verdict = state.get(STATE_KEY)
            if message["type"] == "http.response.start" and isinstance(verdict, Verdict):
                headers = MutableHeaders(scope=message)
                for name, value in verdict.headers().items():
                    headers[name] = value
                if message["status"] == 429 and not verdict.allowed:
                    metrics.rate_limit_refused(verdict.kind)
            await send(message)

        await self.app(scope, receive, send_with_headers)
