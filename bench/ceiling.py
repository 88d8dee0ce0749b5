"""The ceiling: the same framework and server answering the same bytes, with no database and
no auth. What regdesk could reach if its own work cost nothing.

`BENCH_CEILING_FILE` names a JSON file {"<METHOD> <path> <body>": [status, content-type,
body]}: the request's body is part of the key, so two pages of one search (the same path, other
cursors) each get their own answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fastapi import FastAPI, Request, Response


def ceiling_key(method: str, path: str, body: str) -> str:
    return f"{method} {path} {body}"


RESPONSES: dict[str, tuple[int, str, str]] = (
    {
        key: (int(value[0]), str(value[1]), str(value[2]))
        for key, value in json.loads(Path(os.environ["BENCH_CEILING_FILE"]).read_text()).items()
    }
    if "BENCH_CEILING_FILE" in os.environ
    else {}
)

app = FastAPI()


@app.api_route("/{path:path}", methods=["GET", "POST"])
async def answer(path: str, request: Request) -> Response:
    sent = await request.body()  # read what the client sent, as the real server does
    status, media_type, body = RESPONSES[ceiling_key(request.method, f"/{path}", sent.decode())]
    return Response(content=body, status_code=status, media_type=media_type)
