"""create_app(settings): the ASGI application. Routers and middleware, nothing else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from sqlalchemy import text

from regdesk.config import Settings, load_settings
from regdesk.db import instance_secret_key, make_engine


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or load_settings()
    engine = make_engine(settings.database_url)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.secret_key = instance_secret_key(engine, settings.secret_key)
        yield
        engine.dispose()

    app = FastAPI(title="regdesk", version=version("regdesk"), lifespan=lifespan)
    app.state.settings = settings
    app.state.engine = engine

    @app.get("/healthz", include_in_schema=False)
    def healthz(request: Request) -> JSONResponse:
        """200 once the service can reach its database; 503 while it cannot."""
        try:
            with request.app.state.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except Exception:  # any database failure means "not ready"
            return JSONResponse({"status": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/", include_in_schema=False, response_class=HTMLResponse)
    def home() -> str:
        # Real clients fetch `/` before each token request (decisions.md): keep it plain.
        return (
            "<!doctype html><html lang=en><meta charset=utf-8><title>regdesk</title>"
            "<h1>regdesk</h1><p>Registration service. API documentation: "
            '<a href="/docs">/docs</a>.</p></html>'
        )

    return app
