"""The ceiling: the same framework and server answering the same bytes, with no database and
no auth. What regdesk could reach if its own work cost nothing.

`BENCH_CEILING_FILE` names a JSON file {"<METHOD> <path> <body>": [status, content-type,
body]}. Each endpoint becomes one plain route of its own, as a real application declares them
(a catch-all route looking answers up in a table is slower than the app it stands for, and
would flatter every ratio): a route reads the request's body, as the real server does, and
answers its recorded bytes. Two pages of one search (one path, other cursors in the body) share
their path's route, which picks the page by the body it was sent.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Request, Response

from regdesk.observability.telemetry import TELEMETRY_OFF


def ceiling_key(method: str, path: str, body: str) -> str:
    return f"{method} {path} {body}"


Answer = tuple[int, str, bytes]


def _recorded() -> dict[tuple[str, str], dict[str, Answer]]:
    """(method, path) -> {request body -> (status, content type, response body)}."""
    routes: dict[tuple[str, str], dict[str, Answer]] = defaultdict(dict)
    if "BENCH_CEILING_FILE" not in os.environ:
        return routes
    for key, value in json.loads(Path(os.environ["BENCH_CEILING_FILE"]).read_text()).items():
        method, path, body = key.split(" ", 2)
        routes[method, path][body] = (int(value[0]), str(value[1]), str(value[2]).encode())
    return routes


def _route(answers: dict[str, Answer]) -> Callable[[Request], Awaitable[Response]]:
    if len(answers) == 1:
        ((status, media_type, content),) = answers.values()

        async def plain(request: Request) -> Response:
            await request.body()
            return Response(content=content, status_code=status, media_type=media_type)

        return plain

    async def by_body(request: Request) -> Response:
        status, media_type, content = answers[(await request.body()).decode()]
        return Response(content=content, status_code=status, media_type=media_type)

    return by_body


# As regdesk's: the fastest honest app does not ask OpenTelemetry at every request either.
app = FastAPI(telemetry=TELEMETRY_OFF)
for (method, path), answers in _recorded().items():
    app.add_api_route(path, _route(answers), methods=[method])
