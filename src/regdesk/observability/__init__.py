"""Seeing the service run (operator.md, Observability): what each request is, counts and
timings for Prometheus, and whether the service is ready.

- `request_ids`: the id of the request being answered (X-Request-ID), kept in a contextvar that
  log lines and audit events read;
- `observed`: the outermost ASGI layer, which gives each request its id and counts it by
  route template and status, with its latency;
- `metrics`: the series, and the one-line calls (`grant_answered`, `rate_limit_refused`...)
  the rest of the code makes into them;
- `backlog`: the outbox's waiting messages, read at scrape time;
- `exposition`: /metrics in Prometheus's text format, several workers added up (multiprocess
  mode, a directory per `regdesk serve`), on the main port behind a token or on a listener
  of its own;
- `database_errors`: database errors that end a request, counted by kind;
- `logs`: the JSON log format; `routes`: /metrics on the main port; `telemetry`: FastAPI's
  OpenTelemetry bridge, off.
/readyz is the migrations' (migrations/readiness.py): it asks whether the schema is the code's.

This package's `__init__` imports nothing: `request_ids` is read by lower layers (the audit
log), and importing it must not bring in the rest of the package, Prometheus's client with it.
"""
