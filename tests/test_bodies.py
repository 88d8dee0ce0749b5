"""The body limits (regdesk.bodies) against `regdesk serve`: the server's memory stays flat while
large bodies are sent, at once, to every route that reads one, and it still answers after.

The refusals themselves, route by route and in their shapes, are tests/security/test_body_size.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import httpx

from tests import http_calls
from tests.helpers import live_server_process

KIB = 1024
MB = 1024 * KIB
ROUTES = {
    "/api/oauth/token": "application/x-www-form-urlencoded",
    "/api/oauth/revoke": "application/x-www-form-urlencoded",
    "/api/oauth/introspect": "application/x-www-form-urlencoded",
    "/login": "application/x-www-form-urlencoded",
    "/oauth/authorize": "application/x-www-form-urlencoded",
    "/volunteer": "application/x-www-form-urlencoded",
    "/api/v0/users/search": "application/json",
    "/admin/transfer/import": "multipart/form-data; boundary=x",
}
BODY = 64 * MB
# Per route, at once: bodies with an honest Content-Length, bodies without one (chunked), and
# one that declares 400 MB and sends 1 MB of it.
SENDERS = [(BODY, BODY)] * 4 + [(None, BODY)] * 3 + [(400 * MB, MB)]
CHUNK = 64 * KIB
PAUSE = 0.002  # between chunks: slowly enough that a server which buffers shows it
GROWTH = 30 * MB  # what the server's memory may grow by
ANSWER_WAIT = 1.0  # for an answer once a sender has sent what it meant to


def memory(pid: int, field: str = "VmRSS") -> int:
    """The process's resident memory (VmRSS), or its peak so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * KIB
    raise AssertionError(f"no {field} for process {pid}")


async def send(port: int, path: str, declared: int | None, size: int, stop: asyncio.Event) -> None:
    """One POST of `size` bytes (with `declared` as its Content-Length, else chunked), sent a
    chunk at a time until all is sent, the server answers or closes, or `stop` is set."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    framing = f"Content-Length: {declared}" if declared else "Transfer-Encoding: chunked"
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {ROUTES[path]}\r\n"
        f"{framing}\r\n\r\n".encode()
    )
    answered = asyncio.ensure_future(reader.read(1))  # the answer's first byte, or b"" on close
    chunk = b"a" * CHUNK
    try:
        sent = 0
        while sent < size and not answered.done() and not stop.is_set():
            writer.write(chunk if declared else b"%x\r\n%b\r\n" % (len(chunk), chunk))
            await writer.drain()
            sent += len(chunk)
            await asyncio.sleep(PAUSE)
        if not declared and sent >= size:
            writer.write(b"0\r\n\r\n")
        await asyncio.wait([answered], timeout=ANSWER_WAIT)
    except OSError:
        pass  # the server closed the connection: it read no more
    finally:
        answered.cancel()
        writer.close()
        with contextlib.suppress(OSError, asyncio.CancelledError):
            await answered
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def send_all_watching(port: int, pid: int, baseline: int) -> int:
    """Every sender at once; the largest growth of the server's memory seen meanwhile (the
    senders stop early once it passes GROWTH)."""
    stop = asyncio.Event()
    senders = asyncio.gather(
        *(send(port, path, declared, size, stop) for path in ROUTES for declared, size in SENDERS)
    )
    growth = 0
    while not senders.done():
        growth = max(growth, memory(pid) - baseline)
        if growth > GROWTH:
            stop.set()
        await asyncio.wait([senders], timeout=0.02)
    await senders
    return growth


def warm_up(base: str) -> None:
    """One small request and one over the limit to each route, so that what answers them is
    loaded before the baseline is read; each reaches the app (not refused by the transport
    rules)."""
    for path, content_type in ROUTES.items():
        for size in (10, 65 * KIB):
            try:
                response = http_calls.post(
                    f"{base}{path}", content=b"a" * size, headers={"Content-Type": content_type}
                )
            except httpx.TransportError:
                continue  # closed while the body was still on its way: refused unread
            assert "transport" not in response.text, response.text


def test_memory_of_the_server_stays_flat_while_large_bodies_are_sent(sqlite_url: str) -> None:
    with live_server_process(sqlite_url) as (base, pid):
        warm_up(base)
        baseline = memory(pid)
        port = int(base.rsplit(":", 1)[1])
        growth = asyncio.run(asyncio.wait_for(send_all_watching(port, pid, baseline), 30))
        peak = memory(pid, "VmHWM") - baseline
        assert max(growth, peak) < GROWTH, f"grew by {max(growth, peak) / MB:.0f} MB"
        assert http_calls.get(f"{base}/healthz").json() == {"status": "ok"}
