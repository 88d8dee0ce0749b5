"""What the API fuzz shares: a convention's records and live credentials for the fuzzer to
reach, the error-envelope check, and the tally of inputs tried (`build/fuzz.json`).

Bounded by default (a few dozen generated inputs per operation, for `make test`);
`REGDESK_FUZZ_EXAMPLES` raises it (`make fuzz`), `REGDESK_FUZZ_SEED` replays a run.
"""

from __future__ import annotations

import json
import os
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import schemathesis
from schemathesis import Case, CheckContext, Response
from schemathesis.schemas import BaseSchema
from sqlalchemy import Engine, select

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.events.service import current_event_for_writing
from regdesk.oauth.scopes import SCOPES, Holder
from regdesk.registrations.models import Order, Product, Registration
from regdesk.registrations.ordering import place_order
from regdesk.registrations.service import live_registration
from regdesk.roles.models import Role
from regdesk.users.models import User
from tests.api.support import import_rich, load_small_demo
from tests.client import TestClient
from tests.conftest import Apps, Registered, bearer
from tests.oauth.support import basic
from tests.oauth.user_flow import REDIRECT, Flow

EXAMPLES_ENV = "REGDESK_FUZZ_EXAMPLES"
SEED_ENV = "REGDESK_FUZZ_SEED"
BOUNDED_EXAMPLES = 15
BOUNDED_SEED = 20261121  # `make test` tries the same inputs every time; `make fuzz` varies it
REPORT = Path(__file__).resolve().parents[2] / "build" / "fuzz.json"
BASE_URL = "https://testserver"  # plain HTTP from a non-loopback client is refused (api.md 5)

SERVICE_SCOPES = " ".join(n for n, s in SCOPES.items() if s.holder & Holder.SERVICE)
EVERY_SCOPE = " ".join(SCOPES)
USERS_ONLY = "/api/users/current"  # api.md 4.8: a user's token only (and what lies under it)
# registrations.md, API: a user's con:read token reads its own user's registration here.
OWN_OR_SERVICE = "/api/v0/users/{id}/registration"
OWN_SCOPES = "pii:basic con:read pii:finance:read"
OAUTH_PATHS = ("/api/oauth/token", "/api/oauth/revoke", "/api/oauth/introspect")
# Path ids that name no record, beside the real ones (decisions.md: 404).
MISSING_IDS = ("0", "999999", "01", "-1", "9" * 30)


def examples() -> int:
    return int(os.environ.get(EXAMPLES_ENV) or BOUNDED_EXAMPLES)


def seed() -> int:
    return int(os.environ.get(SEED_ENV) or BOUNDED_SEED)


def config() -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": seed(),
            "base-url": BASE_URL,
            "generation": {"mode": "all", "max-examples": examples(), "database": "none"},
            "phases": {"stateful": {"enabled": False}},
            "checks": {
                "enabled": True,
                # Which inputs succeed is not the schema's alone to say: a `nextPage` is valid
                # only as the server issued it (decisions.md, Pagination), a made-up grant is
                # refused (api.md 4.2), a blank body is `{}` (decisions.md) and an empty form
                # field an omitted one (RFC 6749 3.1); and `install` puts real records into
                # generated inputs, invalid ones included.
                "positive_data_acceptance": {"enabled": False},
                "negative_data_rejection": {"enabled": False},
            },
        }
    )


# --- the records and credentials the fuzzer reaches ----------------------------------------


@dataclass(frozen=True)
class World:
    users: list[str]
    volunteers: list[str]  # users with an application for the current event
    registered: list[str]  # users with a live registration for the current event
    products: list[str]  # the current event's products with a live registration
    roles: list[str]
    emails: list[str]
    usernames: list[str]
    service_token: str  # every service scope
    user_token: str  # an administrator's grant of every scope
    own_token: str  # the same administrator's grant of OWN_SCOPES: their own records only
    own_user: str  # that administrator's id
    client: Registered  # authenticates itself at the OAuth endpoints
    codes: list[str]  # unspent authorization codes of `client`
    refresh_tokens: list[str]
    spare_tokens: list[str]  # `client`'s access tokens, for revocation and introspection
    cursors: dict[str, list[str]]  # real `nextPage` values, per path


def build_world(engine: Engine, client: TestClient, apps: Apps) -> World:
    """Demo data and the transfer tests' rich document, then credentials of every kind."""
    load_small_demo(engine, users=40, volunteers=15)
    ids = import_rich(engine).as_json()
    admin = int(ids["users"]["fox"])  # holds the admin permission: may grant every scope
    register_some(engine, [admin, *(int(u) for u in ids["users"].values())])
    with engine.connect() as connection:
        users = connection.execute(select(User.id, User.email, User.username)).all()
        roles = connection.scalars(select(Role.id)).all()
        live = connection.execute(
            select(Registration.user_id, Order.product_id)
            .join(Order, Order.id == Registration.order_id)
            .where(Registration.ended_at.is_(None))
        ).all()
    service_token = apps.service_token(SERVICE_SCOPES)
    service = bearer(service_token)
    applications = client.post("/api/v0/volunteers/search", json={}, headers=service).json()
    cursors = {
        path: [client.post(path, json={"limit": 2}, headers=service).json()["nextPage"]]
        for path in (
            "/api/v0/volunteers/search",
            "/api/v0/users/search",
            "/api/v0/registration/search",
        )
    }
    roles_page = client.get("/api/v0/roles", params={"limit": 1}, headers=service).json()
    cursors["/api/v0/roles"] = [roles_page["nextPage"]]
    oauth = apps.register(
        service_scopes=SERVICE_SCOPES, obo_scopes=EVERY_SCOPE, redirect_uris=[REDIRECT]
    )
    flow = Flow(client, engine, oauth, admin)
    return World(
        users=[str(u.id) for u in users],
        volunteers=[volunteer["user"]["id"] for volunteer in applications["data"]],
        registered=sorted({str(row.user_id) for row in live}),
        products=sorted({str(row.product_id) for row in live}),
        roles=[str(r) for r in roles],
        emails=[u.email for u in users],
        usernames=[u.username for u in users],
        service_token=service_token,
        user_token=apps.mint(apps.register(obo_scopes=EVERY_SCOPE), EVERY_SCOPE, user_id=admin),
        own_token=apps.mint(apps.register(obo_scopes=OWN_SCOPES), OWN_SCOPES, user_id=admin),
        own_user=str(admin),
        client=oauth,
        codes=[flow.code("pii:basic pii:email") for _ in range(8)],
        refresh_tokens=[flow.tokens("pii:basic user:read")["refresh_token"] for _ in range(4)],
        spare_tokens=[apps.mint(oauth, SERVICE_SCOPES) for _ in range(8)],
        cursors=cursors,
    )


def register_some(engine: Engine, user_ids: list[int]) -> None:
    """These users registered for the current event (those who are not yet, whatever the demo
    made), so that registration routes find records and a user's token its own."""
    with write_session(engine) as session:
        event = current_event_for_writing(session)
        product = Product(event_id=event.id, name="fuzz", price=4200)
        session.add(product)
        session.flush()
        for user_id in dict.fromkeys(user_ids):
            if live_registration(session, user_id) is None:
                place_order(
                    session, Actor("test:fuzz"), user_id=user_id, product_id=product.id,
                    currency="USD",
                )  # fmt: skip


def install(schema: BaseSchema, world: World) -> None:
    """Real credentials on every case, and real ids, cursors and grants in some of them."""

    @schema.auth(refresh_interval=None)
    class Credentials:
        def get(self, case: Case[Any], context: schemathesis.AuthContext) -> dict[str, str]:
            # One of two credentials, chosen by the input itself: the same on a replay.
            either = zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode()) % 2
            path = context.operation.path
            if path in OAUTH_PATHS:  # the real client in HTTP Basic, or whatever the form says
                return basic(world.client.client_id, world.client.client_secret) if either else {}
            if path.startswith(USERS_ONLY):
                return bearer(world.own_token if either else world.user_token)
            if path == OWN_OR_SERVICE:  # the own token about its user, and about others
                if str((case.path_parameters or {}).get("id")) == world.own_user:
                    return bearer(world.own_token)
                mine = zlib.crc32(repr(case.path_parameters).encode()) % 3
                return bearer([world.service_token, world.user_token, world.own_token][mine])
            return bearer(world.user_token if either else world.service_token)

        def set(
            self, case: Case[Any], data: dict[str, str], context: schemathesis.AuthContext
        ) -> None:
            case.headers.update(data)

    users = st.sampled_from(world.users + list(MISSING_IDS))
    real_ids = {
        "id": users,
        "roleId": st.sampled_from(world.roles + list(MISSING_IDS)),
    }
    # Most users have no application: ask for those who have one as often as for anyone.
    volunteers = {**real_ids, "id": st.one_of(st.sampled_from(world.volunteers), users)}
    # A user's own registration (the own token's) as often as another's, or anyone's.
    registered = {
        **real_ids,
        "id": st.one_of(st.just(world.own_user), st.sampled_from(world.registered), users),
    }

    @schema.hook
    def flatmap_path_parameters(
        context: schemathesis.HookContext, path_parameters: dict[str, Any]
    ) -> st.SearchStrategy[dict[str, Any]]:
        if not isinstance(path_parameters, dict) or context.operation is None:
            return st.just(path_parameters)
        path = context.operation.path
        ids = (
            volunteers
            if path.endswith("/volunteer")
            else registered
            if path == OWN_OR_SERVICE
            else real_ids
        )
        real = {name: ids[name] for name in path_parameters if name in ids}
        return st.one_of(
            st.just(path_parameters),
            st.fixed_dictionaries(real).map(lambda chosen: {**path_parameters, **chosen}),
        )

    @schema.hook
    def flatmap_query(
        context: schemathesis.HookContext, query: dict[str, Any]
    ) -> st.SearchStrategy[dict[str, Any]]:
        cursors = world.cursors.get(context.operation.path) if context.operation else None
        if not cursors or not isinstance(query, dict):
            return st.just(query)
        return st.one_of(
            st.just(query), st.sampled_from(cursors).map(lambda c: {**query, "nextPage": c})
        )

    @schema.hook
    def flatmap_body(context: schemathesis.HookContext, body: Any) -> st.SearchStrategy[Any]:
        if not isinstance(body, dict) or context.operation is None:
            return st.just(body)
        real = _real_members(world, context.operation.path)
        if real is None:
            return st.just(body)
        return st.one_of(st.just(body), real.map(lambda chosen: {**body, **chosen}))


def _real_members(world: World, path: str) -> st.SearchStrategy[dict[str, Any]] | None:
    """Members of a request body that name real records, grants and cursors."""
    cursors = world.cursors.get(path)
    if path == "/api/v0/users/search":
        filters = st.fixed_dictionaries(
            {},
            optional={
                "roleId": st.sampled_from([int(r) for r in world.roles]),
                "email": st.sampled_from(world.emails).flatmap(
                    lambda email: st.sampled_from([email, email.upper()])  # any case matches
                ),
                "username": st.sampled_from(world.usernames),
            },
        )
        return st.fixed_dictionaries({}, optional={"filter": filters, "nextPage": _one(cursors)})
    if path == "/api/v0/volunteers/search":
        return st.fixed_dictionaries({"nextPage": _one(cursors)})
    if path == "/api/v0/registration/search":
        # Ids as strings of digits or integers, as real clients send them.
        ids = st.sampled_from(world.registered).flatmap(lambda i: st.sampled_from([i, int(i)]))
        products = st.sampled_from(world.products).flatmap(lambda i: st.sampled_from([i, int(i)]))
        filters = st.fixed_dictionaries(
            {},
            optional={
                "userIds": st.lists(ids, max_size=5),
                "status": st.sampled_from(["paid", "unpaid"]),
                "productIds": st.lists(products, max_size=3),
            },
        )
        return st.fixed_dictionaries({}, optional={"filter": filters, "nextPage": _one(cursors)})
    if path == "/api/oauth/token":
        return st.one_of(
            st.just({"grant_type": "client_credentials"}),
            st.fixed_dictionaries(
                {
                    "grant_type": st.just("authorization_code"),
                    "code": st.sampled_from(world.codes),
                    "redirect_uri": st.just(REDIRECT),
                }
            ),
            st.fixed_dictionaries(
                {
                    "grant_type": st.just("refresh_token"),
                    "refresh_token": st.sampled_from(world.refresh_tokens),
                }
            ),
        )
    if path in ("/api/oauth/revoke", "/api/oauth/introspect"):
        return st.fixed_dictionaries({"token": st.sampled_from(world.spare_tokens)})
    return None


def _one(values: list[str] | None) -> st.SearchStrategy[str]:
    return st.sampled_from(values) if values else st.nothing()


# --- the error envelope --------------------------------------------------------------------


def error_envelope(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
    """A schemathesis check: `error_problem` of every answer."""
    content_type = response.headers.get("content-type", [""])[0]
    problem = error_problem(case.operation.path, response.status_code, content_type, response.text)
    if problem is not None:
        raise AssertionError(f"{case.operation.label}: {response.status_code} {problem}")
    return None


def error_problem(path: str, status: int, content_type: str, text: str) -> str | None:
    """What is wrong with an answer, if it is an error (4xx, 5xx) outside its envelope
    (decisions.md, Errors): the API's `{"errors": {<category>: {"message": ...}}}` (a 500:
    `{"hash": ...}`), or RFC 6749 5.2's `{"error", "error_description"}` at the OAuth
    endpoints. Always JSON."""
    if status < 400:
        return None
    if not content_type.startswith("application/json"):
        return f"is {content_type!r}, not JSON"
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        return f"is not JSON: {text[:200]!r}"
    # A 405 comes from routing, before any endpoint runs: the API's envelope, with `Allow`.
    if path in OAUTH_PATHS and status != 405:
        problem = _oauth_problem(body)
    else:
        problem = _envelope_problem(body)
    return None if problem is None else f"{problem}: {body!r}"


def _envelope_problem(body: Any) -> str | None:
    if not isinstance(body, dict) or list(body) != ["errors"]:
        return "is not an object with `errors` alone"
    errors = body["errors"]
    if not isinstance(errors, dict) or len(errors) != 1:
        return "does not name exactly one category"
    [(category, detail)] = errors.items()
    if not isinstance(detail, dict):
        return f"has a {category!r} that is not an object"
    expected = "hash" if category == "server" else "message"
    if not isinstance(detail.get(expected), str) or not detail[expected]:
        return f"has a {category!r} without its {expected!r}"
    return None


def _oauth_problem(body: Any) -> str | None:
    if not isinstance(body, dict) or set(body) != {"error", "error_description"}:
        return "is not RFC 6749 5.2's `error` and `error_description`"
    if not all(isinstance(value, str) and value for value in body.values()):
        return "has an empty or non-string member"
    return None


# --- what was tried ------------------------------------------------------------------------


@dataclass
class Tally:
    """The inputs one run generated and sent, per operation and phase, and what they got."""

    backend: str
    inputs: Counter[str] = field(default_factory=Counter)
    phases: Counter[str] = field(default_factory=Counter)
    statuses: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def tried(self, case: Case[Any]) -> None:
        self.inputs[case.operation.label] += 1
        self.phases[case.meta.phase.name.value if case.meta is not None else "explicit"] += 1

    def answered(self, case: Case[Any], response: Response) -> None:
        self.statuses[case.operation.label][str(response.status_code)] += 1

    def write(self, seconds: float, report: Path = REPORT) -> None:
        """Merged into `report` under this backend, so the other database's run stays."""
        report.parent.mkdir(parents=True, exist_ok=True)
        runs = json.loads(report.read_text()) if report.exists() else {}
        runs[self.backend] = {
            "examples": examples(),
            "seed": seed(),
            "seconds": round(seconds, 1),
            "inputs": sum(self.inputs.values()),
            "phases": dict(self.phases),
            "operations": {
                label: {"inputs": count, "statuses": dict(self.statuses[label])}
                for label, count in self.inputs.items()
            },
        }
        partial = report.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(runs, indent=2, sort_keys=True) + "\n")
        partial.replace(report)
