"""/metrics in Prometheus's text format: this process's series, or under `regdesk serve` every
worker's added up (multiprocess.py), with the outbox's backlog read at that moment.

Never public (operator.md, Metrics): on the main port only with REGDESK_METRICS_TOKEN as a
bearer token (routes.py), or on a listener of its own at REGDESK_METRICS_ADDRESS, a thread of
the `regdesk serve` process that every worker writes for, meant for a private address.
"""

from __future__ import annotations

from collections.abc import Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest, start_http_server
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry

from regdesk.observability import metrics, multiprocess

CONTENT_TYPE = CONTENT_TYPE_LATEST


class _InProcess(Collector):
    """The series of this process alone (no multiprocess directory)."""

    def collect(self) -> Iterator[Metric]:
        yield from metrics.series().registry.collect()


def registry(*collectors: Collector) -> CollectorRegistry:
    """What a scrape reads: the series (each worker's file, or this process's memory), then
    `collectors` (the outbox's backlog)."""
    made = CollectorRegistry()
    folder = multiprocess.directory()
    if folder is not None:
        MultiProcessCollector(made, path=str(folder))  # type: ignore[no-untyped-call]
    else:
        made.register(_InProcess())
    for collector in collectors:
        made.register(collector)
    return made


def scrape(*collectors: Collector) -> bytes:
    return generate_latest(registry(*collectors))


def listen(host: str, port: int, *collectors: Collector) -> WSGIServer:
    """The metrics listener of `regdesk serve` on host:port, answering every path with the
    scrape (Prometheus's own small server, in a daemon thread); `shutdown()` stops it."""
    server, _thread = start_http_server(port, host, registry=registry(*collectors))
    return server
