"""FastAPI's own OpenTelemetry bridge, off (`TELEMETRY_OFF`, given to the app): regdesk reports
through Prometheus (/metrics) and its logs, and sends no traces. Left on, the bridge looks up
OpenTelemetry's three providers at every request to see whether one is configured: a get user
called in-process took 118 µs with it, 107 without (docs/development/performance.md). The
benchmark's ceiling turns it off the same way (bench/ceiling.py)."""

from __future__ import annotations

from fastapi.telemetry import TelemetryConfig

TELEMETRY_OFF: TelemetryConfig = {
    "tracing": False,
    "metrics": False,
    "logs": False,
    "auto_configure": False,
}
