"""The outermost ASGI layer: each request gets its id (request_ids.py), sent back in
`X-Request-ID` on whatever answers it, and is counted by route template and status, with its
latency (metrics.py).

It wraps the whole application, the server-error handler included (`observe_every_request`),
so a 500 and the answers given before routing (the transport rules, the quick token path)
carry the id and are counted too; and, in a server whose access log is on, each answer is
noted for its line as it starts (web/access_log.py). Pure ASGI and a few microseconds a
request: one header looked up, one added, two series moved, a tuple queued.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter

from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from regdesk.observability import metrics
from regdesk.observability.request_ids import RequestContext, current, incoming_or_new

# Where a layer that answers before routing names the route it answered for
# (oauth/quick_grant.py): the route template of what routing would have chosen.
ANSWERED_AS = "regdesk.route"
_HEADER = b"x-request-id"

# Told of each answer as it starts: its request's scope, the status, the request's context.
AnswerNote = Callable[[Scope, int, RequestContext], None]


def observe_every_request(app: Starlette, note_answer: AnswerNote | None = None) -> None:
    """`ObservedRequests` around `app`'s whole middleware stack. Starlette puts its
    server-error handler outside every middleware added, and a 500 it sends would go out
    without the request's id: the stack is wrapped as Starlette builds it instead."""
    build = app.build_middleware_stack

    def observed_stack() -> ASGIApp:
        return ObservedRequests(build(), note_answer)

    app.build_middleware_stack = observed_stack  # type: ignore[method-assign]


class ObservedRequests:
    def __init__(self, app: ASGIApp, note_answer: AnswerNote | None = None) -> None:
        self.app = app
        self.note_answer = note_answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = perf_counter()
        root_path = scope.get("root_path", "")
        given = next((value for name, value in scope["headers"] if name == _HEADER), None)
        context = RequestContext(incoming_or_new(given), started)
        echoed = (_HEADER, context.id.encode("ascii"))
        status = 500  # what the server answers when nothing was sent

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # A new list: a response object's own headers are never changed in place.
                message = {**message, "headers": [*message.get("headers", ()), echoed]}
                if self.note_answer is not None:
                    self.note_answer(scope, status, context)
            await send(message)

        reset = current.set(context)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            current.reset(reset)
            metrics.request_answered(
                route_template(scope, root_path), scope["method"], status, perf_counter() - started
            )


def route_template(scope: Scope, root_path: str) -> str:
    """The path of the route that answered (`/api/v0/users/{id}`), never the request's own;
    `root_path` is the scope's before routing."""
    route = scope.get("route")
    if route is not None:
        return getattr(route, "path", metrics.UNMATCHED) or metrics.UNMATCHED
    mounted: str = scope.get("root_path", "")
    if mounted != root_path:  # a mount (static files) answered: routing added its path
        return mounted[len(root_path) :] + "/{path}"
    answered_as: str = scope.get(ANSWERED_AS, metrics.UNMATCHED)
    return answered_as
