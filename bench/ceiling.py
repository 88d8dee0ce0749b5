"""The ceiling: the same framework and server answering the same bytes, with no database and
no auth. What regdesk could reach if its own work cost nothing.

`BENCH_CEILING_FILE` names a JSON file {"<METHOD> <path>": [status, content-type, body]}.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fastapi import FastAPI, Request, Response

RESPONSES: dict[str, tuple[int, str, str]] = {
    key: (int(value[0]), str(value[1]), str(value[2]))
    for key, value in json.loads(Path(os.environ["BENCH_CEILING_FILE"]).read_text()).items()
}

app = FastAPI()


@app.api_route("/{path:path}", methods=["GET", "POST"])
async def answer(path: str, request: Request) -> Response:
    await request.body()  # read what the client sent, as the real server does
    status, media_type, body = RESPONSES[f"{request.method} /{path}"]
    return Response(content=body, status_code=status, media_type=media_type)
