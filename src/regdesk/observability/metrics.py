"""The series regdesk exposes at /metrics, and the one-line calls that move them.

Every label value comes from a short list this code knows (route templates, grant types,
limit names, error kinds), never from what a client sent: a label value per distinct input
would let anyone grow the server's memory and the scrape without bound.

The series are made at the first call, in the mode PROMETHEUS_MULTIPROC_DIR names then (each
worker's values in a file, or in memory; observability/multiprocess.py): `regdesk serve` sets
it after the command line has imported this module, and Prometheus's client, which picks its
mode once when it is imported, may have been imported before (a process that imported the app
ahead of a server's start, as the tests' fork server does). `series` sets the mode itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from regdesk.observability import multiprocess

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry, Counter, Histogram

UNMATCHED = "unmatched"  # the route of every request no route matched
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
GRANT_TYPES = frozenset({"client_credentials", "authorization_code", "refresh_token"})
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class Series:
    registry: CollectorRegistry  # this process's, read when there is no multiprocess directory
    requests: Counter
    latency: Histogram
    grants: Counter
    rate_limit_refusals: Counter
    refresh_token_reuse: Counter
    database_errors: Counter


# This process's id, kept: in multiprocess mode the client asks for it on every move of every
# series, to notice a fork (os.getpid() each time: 5 % of a record read's time); a forked
# child notes its own.
_process = [os.getpid()]
os.register_at_fork(after_in_child=lambda: _process.__setitem__(0, os.getpid()))


def process_id() -> int:
    return _process[0]


@cache
def series() -> Series:
    """The series of this process, made once."""
    from prometheus_client import (
        CollectorRegistry,
        Counter,
        Histogram,
        disable_created_metrics,
        values,
    )

    # The mode this process's environment names now, whatever it named when the client was
    # first imported (the fork server of the tests imports it before a server's start sets it).
    if multiprocess.directory() is not None:  # a file per process
        values.ValueClass = values.MultiProcessValue(process_identifier=process_id)  # type: ignore[no-untyped-call]
    else:
        values.ValueClass = values.MutexValue
    disable_created_metrics()  # type: ignore[no-untyped-call]  # multiprocess mode has none
    registry = CollectorRegistry(auto_describe=True)
    return Series(
        registry=registry,
        requests=Counter(
            "regdesk_http_requests",
            "HTTP requests answered, by route template, method and status.",
            ["route", "method", "status"],
            registry=registry,
        ),
        latency=Histogram(
            "regdesk_http_request_duration_seconds",
            "Time from a request's arrival to the end of its answer, by route template.",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        grants=Counter(
            "regdesk_token_grants",
            "Token requests answered, by grant type and outcome: issued, or the OAuth error.",
            ["grant_type", "outcome"],
            registry=registry,
        ),
        rate_limit_refusals=Counter(
            "regdesk_rate_limit_refusals",
            "Requests refused 429 by a rate limit, by the limit's name (ratelimit.py).",
            ["limit"],
            registry=registry,
        ),
        refresh_token_reuse=Counter(
            "regdesk_refresh_token_reuse_detections",
            "Consumed refresh tokens presented again: each revoked its grant (api.md 3.2).",
            registry=registry,
        ),
        database_errors=Counter(
            "regdesk_database_errors",
            "Database errors that ended a request, by kind (the DB-API's exception class).",
            ["kind"],
            registry=registry,
        ),
    )


# Children by series and label values, kept here: `labels()` takes a lock on every call.
_children: dict[tuple[str, tuple[str, ...]], Any] = {}


def _child(name: str, *values: str) -> Any:
    key = (name, values)
    child = _children.get(key)
    if child is None:
        child = _children[key] = getattr(series(), name).labels(*values)
    return child


# Each (route, method, status)'s request counter and latency histogram: one lookup a request.
_answered: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def request_answered(route: str, method: str, status: int, seconds: float) -> None:
    """One request answered (observed.py, for every request)."""
    key = (route, method if method in METHODS else "other", status)
    children = _answered.get(key)
    if children is None:
        children = _answered[key] = (
            _child("requests", route, key[1], str(status)),
            _child("latency", route),
        )
    children[0].inc()
    children[1].observe(seconds)


def grant_answered(grant_type: str | None, error: str | None) -> None:
    """A token request answered: issued when `error` is None, else refused with that OAuth
    error code. The quick path (oauth/quick_grant.py) and the token route both call it."""
    kind = grant_type if grant_type in GRANT_TYPES else "other"
    _child("grants", kind, error or "issued").inc()


def rate_limit_refused(limit: str) -> None:
    """A request refused 429 by the limit named `limit` (ratelimit.py's kinds)."""
    _child("rate_limit_refusals", limit).inc()


def refresh_token_reused() -> None:
    series().refresh_token_reuse.inc()


def database_error(kind: str) -> None:
    _child("database_errors", kind).inc()
