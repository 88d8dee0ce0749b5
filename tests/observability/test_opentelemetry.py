"""regdesk reports through Prometheus and its logs, and sends no OpenTelemetry: FastAPI's own
bridge is off (observability/telemetry.py). A process whose OpenTelemetry providers are
configured is still never asked for a tracer or a meter, by a record read, a token grant or a
page; and no request pays for asking whether one is configured."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.metrics import Meter, MeterProvider, NoOpMeter
from opentelemetry.trace import NoOpTracer, Tracer, TracerProvider
from sqlalchemy import Engine

from tests.client import TestClient
from tests.observability.support import add_user, register


class AskedTracers(TracerProvider):
    """A configured tracer provider (neither OpenTelemetry's deferred one nor its no-op one,
    which FastAPI passes over) that notes who asks it for a tracer."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def get_tracer(self, instrumenting_module_name: str, *args: Any, **kwargs: Any) -> Tracer:
        self.asked.append(instrumenting_module_name)
        return NoOpTracer()


class AskedMeters(MeterProvider):
    """The same, for meters."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> Meter:
        self.asked.append(name)
        return NoOpMeter(name)


def test_configured_opentelemetry_providers_are_never_asked(
    engine: Engine, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracers, meters = AskedTracers(), AskedMeters()
    looked_up: list[str] = []  # each time anything asked for a global provider

    def provider(name: str, found: Any) -> Any:
        looked_up.append(name)
        return found

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider("tracer", tracers))
    monkeypatch.setattr(metrics, "get_meter_provider", lambda: provider("meter", meters))
    tool = register(engine, service_scopes="user:read")
    user = add_user(engine)
    token = client.post(
        "/api/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(tool.client_id, tool.client_secret),
    )
    assert token.status_code == 200, token.text
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    assert client.get(f"/api/v0/users/{user}", headers=headers).status_code == 200
    assert client.get("/login").status_code == 200
    assert client.get("/healthz").status_code == 200
    assert (tracers.asked, meters.asked) == ([], [])
    assert looked_up == []
