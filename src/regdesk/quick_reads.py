"""The hot API reads, called without the framework's dependency solving.

An integration's most frequent requests (the current user, one user, a page of records, the
departments) cost regdesk less than FastAPI spends around them: solving the route's
dependencies through their parameter models, then validating and serializing what the
endpoint returns. A route marked `@quick`, on a router whose route class is `QuickRoute`, is
routed as every route is, and then calls its own dependencies (its guard, its body reader, its
database handle) and its own endpoint, with its own arguments, directly, and sends the
endpoint's own response. There is one implementation: a rule changed in a guard or an endpoint
holds on both paths.

This path only ever answers what succeeds. Whatever raises (no token, a missing scope, a bad
body, no such record, a database gone away) is left to FastAPI's own handler, which runs the
route again (the body, read whole before the direct call, is kept on the request) and renders
the error as every route does. Mark only reads: a refused request runs its route twice. The
guard runs once for a request, whichever path asks (oauth/guard.py keeps the live token on
the request's state), so a request counts once against its rate limit.

Only what can be called without a worker thread is taken: an `async def` endpoint returning a
response, whose dependencies are all `async def` functions (no `yield`), taking nothing but
other dependencies, path parameters typed `str`, the request and the security scopes. Anything
else is refused when the route is made (`QuickRouteError`), so that a route cannot be marked
quick and silently go slow.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import SecurityScopes
from starlette.requests import Request
from starlette.responses import Response

F = TypeVar("F", bound=Callable[..., Any])

_QUICK: set[Callable[..., Any]] = set()
# Off: every quick route answers through FastAPI's own handler alone. The tests turn it off to
# hold both paths to the same answers (tests/api/test_permissions.py, tests/test_quick_reads.py).
DIRECT_CALLS = True


def quick(endpoint: F) -> F:
    """Marks a route's endpoint to be called directly by its QuickRoute (see the module)."""
    _QUICK.add(endpoint)
    return endpoint


class QuickRouteError(TypeError):
    """A route marked quick that this path cannot call as FastAPI would."""


# --- a route's dependencies, called as FastAPI calls them ------------------------------------


def _scopes(dependant: Dependant) -> list[str]:
    """The security scopes a dependency sees: its parents' then its own, each once (FastAPI's
    order)."""
    scopes = list(dependant.parent_oauth_scopes or [])
    scopes += [s for s in dependant.own_oauth_scopes or [] if s not in scopes]
    return scopes


def _is_async(call: Any) -> bool:
    if inspect.isclass(call):
        return False
    function = call if inspect.isfunction(call) or inspect.ismethod(call) else call.__call__
    return inspect.iscoroutinefunction(function)


def _check(dependant: Dependant, route: APIRoute) -> None:
    """Refuses a dependency (or the endpoint) this path does not call as FastAPI would."""
    where = f"{route.path} ({dependant.call!r})"
    if dependant.call is None or not _is_async(dependant.call):
        raise QuickRouteError(f"{where}: only `async def` endpoints and dependencies are quick")
    unsupported = (
        dependant.query_params,
        dependant.header_params,
        dependant.cookie_params,
        dependant.body_params,
        dependant.websocket_param_name,
        dependant.response_param_name,
        dependant.background_tasks_param_name,
    )
    if any(unsupported):
        raise QuickRouteError(f"{where}: only path parameters, the request and scopes are taken")
    for field in dependant.path_params:
        if field.field_info.annotation is not str:
            raise QuickRouteError(f"{where}: path parameter {field.name} is not typed str")
    for sub in dependant.dependencies:
        _check(sub, route)


@dataclass(frozen=True)
class _Plan:
    """How to call one dependency (or the endpoint) as FastAPI would, worked out once when
    the route is made: its dependencies' plans, each with its cache key (the call and the
    scopes it sees, as FastAPI caches them) and the name it is passed as; its path parameters
    (name, alias); the names it takes the request by; its security scopes."""

    call: Callable[..., Any]
    dependencies: tuple[tuple[_Plan, tuple[Any, ...], bool, str | None], ...]
    path_params: tuple[tuple[str, str], ...]
    request_names: tuple[str, ...]
    scopes_name: str | None
    scopes: tuple[str, ...]


def _plan(dependant: Dependant) -> _Plan:
    assert dependant.call is not None  # _check saw to it
    return _Plan(
        call=dependant.call,
        dependencies=tuple(
            (_plan(sub), (sub.call, tuple(sorted(set(_scopes(sub))))), sub.use_cache, sub.name)
            for sub in dependant.dependencies
        ),
        path_params=tuple((field.name, field.alias) for field in dependant.path_params),
        request_names=tuple(
            name
            for name in (dependant.request_param_name, dependant.http_connection_param_name)
            if name is not None
        ),
        scopes_name=dependant.security_scopes_param_name,
        scopes=tuple(_scopes(dependant)),
    )


async def _arguments(
    plan: _Plan, request: Request, solved: dict[tuple[Any, ...], Any]
) -> dict[str, Any]:
    """The keyword arguments of `plan.call` for this request: its dependencies' values (each
    solved once a request, as FastAPI caches them), its path parameters, the request and its
    security scopes."""
    values: dict[str, Any] = {}
    for sub, key, use_cache, name in plan.dependencies:
        if use_cache and key in solved:
            value = solved[key]
        else:
            value = solved[key] = await sub.call(**await _arguments(sub, request, solved))
        if name is not None:
            values[name] = value
    if plan.path_params:
        path_params = request.path_params
        for name, alias in plan.path_params:
            values[name] = path_params[alias]
    for name in plan.request_names:
        values[name] = request
    if plan.scopes_name is not None:
        values[plan.scopes_name] = SecurityScopes(list(plan.scopes))
    return values


# --- the route class --------------------------------------------------------------------------


class QuickRoute(APIRoute):
    """The route class of the routers that hold quick routes: a route whose endpoint is marked
    `@quick` is called directly (see the module); the others are plain APIRoutes."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        standard = super().get_route_handler()
        if self.endpoint not in _QUICK:
            return standard
        if self.dependencies:
            raise QuickRouteError(f"{self.path}: route-level dependencies are not taken")
        _check(self.dependant, self)
        plan, endpoint = _plan(self.dependant), self.endpoint

        async def handler(request: Request) -> Response:
            if DIRECT_CALLS:
                if request.method not in ("GET", "HEAD"):
                    # Read whole first, and kept on the request: FastAPI's handler, if it runs
                    # after, reads the same bytes. A body cut off or over its limit fails here
                    # as in the route's own reader (a body half read could not be read again).
                    await request.body()
                try:
                    response = await endpoint(**await _arguments(plan, request, {}))
                except Exception:  # every refusal and failure is the standard path's to render
                    response = None
                if isinstance(response, Response):
                    return response
            return await standard(request)  # the body, if read, is kept on the request

        return handler
