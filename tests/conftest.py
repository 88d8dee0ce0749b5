"""Shared fixtures: a migrated database on SQLite, and on PostgreSQL when it is configured.

Tests that take `database_url` (or `engine`) run once per backend. PostgreSQL runs need
REGDESK_TEST_POSTGRES_URL (`.ci/run` sets it); each test then gets a schema of its own,
reached through the URL's search_path so subprocesses see it too.

Migrations run once per test process, not once per test: a test that takes `engine` (or
anything built on it) gets a copy of a database migrated once (tests/databases.py says how);
one that takes only `database_url` gets an empty database, for migrations and commands.

Passwords are hashed with argon2id at its smallest cost in every test process (one knob,
`cheap_password_hashing`): the same real hashing and verification, quick. A test that needs
the service's own cost is marked `real_password_hashing`. And RSA signing keys, which every
app start makes and which take a tenth of a second each, are made once per test process and
handed out again (`reused_rsa_keys`), never twice to one database. The engines of a test
process share the SQL they compiled (`shared_compiled_sql`).
"""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import bench.http as bench_http
import pytest
from argon2 import PasswordHasher
from click.testing import CliRunner, Result
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI
from sqlalchemy import Dialect, Engine, create_engine, make_url, select, text
from sqlalchemy.util import LRUCache

from regdesk import db as regdesk_db
from regdesk import security
from regdesk.app import create_app
from regdesk.audit.service import Actor
from regdesk.cli import main
from regdesk.config import load_settings
from regdesk.db import make_engine, write_session
from regdesk.keys import store as key_store
from regdesk.keys.models import SigningKey
from regdesk.oauth.applications import DEFAULT_ID_TOKEN_ALG, create_application
from regdesk.oauth.authorization import approve, check_authorization_request, scopes_user_lacks
from regdesk.oauth.models import Application
from tests import forkserver
from tests.client import TestClient
from tests.databases import (
    CATALOGS,
    KeptConnections,
    PostgresSchemas,
    SqliteTemplate,
    autocommit,
    with_schema,
)

POSTGRES_ENV = "REGDESK_TEST_POSTGRES_URL"


def postgres_base_url() -> str | None:
    return os.environ.get(POSTGRES_ENV) or None


# --- where tests keep their files -------------------------------------------------------------

# Each test's files (its SQLite databases above all, copied from the template, opened, written
# and closed) go to the machine's memory file system where it has one: a database's last
# connection closing checkpoints its write-ahead log and syncs the file to disk, 1.8 ms on these
# machines' disk against 0.15 ms in /dev/shm (open, write, close), and 412 tests of the API,
# OAuth, users and pages synced 1,592 times. Nothing a test checks depends on the disk: a killed
# process's writes are in the kernel's cache either way. pyproject.toml keeps only failed tests'
# folders, so that memory holds no more than the last runs' failures: a whole run had at most
# 46 MB there at once (440 MB were kept at its end before). Where /dev/shm has less than 512 MB
# free (a container's is 64 MB in all), the files go where pytest puts them by default.
MEMORY = Path("/dev/shm")  # noqa: S108 (pytest makes its folder there its own, mode 700)
MEMORY_FREE_AT_LEAST = 512 * 1024**2


def _memory_folder_fits() -> bool:
    if not (MEMORY.is_dir() and os.access(MEMORY, os.W_OK)):
        return False
    found = os.statvfs(MEMORY)
    return found.f_bavail * found.f_frsize >= MEMORY_FREE_AT_LEAST


if "PYTEST_DEBUG_TEMPROOT" not in os.environ and _memory_folder_fits():
    os.environ["PYTEST_DEBUG_TEMPROOT"] = str(MEMORY)


# --- passwords ------------------------------------------------------------------------------

CHEAP_PASSWORD_HASHER = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


@pytest.fixture(scope="session", autouse=True)
def cheap_password_hashing() -> Iterator[None]:
    """argon2id at its smallest cost for the whole test process (module fixtures included)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(security, "_password_hasher", CHEAP_PASSWORD_HASHER)
        yield


@pytest.fixture(autouse=True)
def _real_password_hashing_when_marked(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if request.node.get_closest_marker("real_password_hashing") is not None:
        monkeypatch.setattr(security, "_password_hasher", security.SERVICE_PASSWORD_HASHER)


# --- signing keys ---------------------------------------------------------------------------

# Each app start makes the instance's RSA key for ID tokens (oidc.ensure_keys), and a 2048-bit
# RSA key takes about a tenth of a second to make: more than the rest of most tests. So a test
# process keeps the RSA keys the real generator made and hands them out again: a database gets
# the first one it does not hold yet (its kids are the keys' thumbprints), a new one made when
# it holds them all. Same real keys, same store code; a database never holds one key twice.
_RSA_KEYS: list[tuple[str, rsa.RSAPrivateKey]] = []  # (thumbprint, key), in the order made
_kids_held: ContextVar[frozenset[str]] = ContextVar("kids_held")


@pytest.fixture(scope="session", autouse=True)
def reused_rsa_keys() -> Iterator[None]:
    make_rsa = key_store.GENERATORS["RS256"]
    add = key_store._add

    def add_noting_held_kids(bind: key_store.Bind, purpose: str, algorithm: str) -> None:
        held = frozenset(bind.execute(select(SigningKey.kid)).scalars())
        token = _kids_held.set(held)
        try:
            add(bind, purpose, algorithm)
        finally:
            _kids_held.reset(token)

    def reused_rsa() -> key_store.PrivateKeyType:
        held = _kids_held.get(frozenset())
        for kid, key in _RSA_KEYS:
            if kid not in held:
                return key
        made = make_rsa()
        assert isinstance(made, rsa.RSAPrivateKey)
        _RSA_KEYS.append((key_store.thumbprint(made.public_key()), made))
        return made

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(key_store, "_add", add_noting_held_kids)
        patch.setitem(key_store.GENERATORS, "RS256", reused_rsa)
        yield


# --- compiled SQL -----------------------------------------------------------------------------

# SQLAlchemy keeps the SQL it compiled on the engine, under the engine's own dialect: a test's
# engines (its own, its app's) start with none, and compile every statement again, a seventh
# of the time of a page test. So the engines of a test process share one store, under a key
# that names the dialect by what its compilation depends on (its class, its driver's style,
# the server's version) instead of by the instance: the same statement compiled once per
# process and database kind, as one long-lived process compiles it once.


class SharedCompiledCache:
    """One engine's view of the process's store of compiled statements."""

    def __init__(self, store: LRUCache[Any, Any], dialect: Dialect) -> None:
        self._store = store
        self._dialect = dialect

    def _key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        dialect = self._dialect
        kind = (type(dialect), dialect.paramstyle, dialect.server_version_info)
        return (kind, *key[1:])

    def get(self, key: tuple[Any, ...], default: Any = None) -> Any:
        return self._store.get(self._key(key), default)

    def __setitem__(self, key: tuple[Any, ...], value: Any) -> None:
        self._store[self._key(key)] = value


@pytest.fixture(scope="session", autouse=True)
def shared_compiled_sql() -> Iterator[None]:
    store: LRUCache[Any, Any] = LRUCache(20_000)

    def create_sharing(url: Any, **kwargs: Any) -> Engine:
        if make_url(url).get_backend_name() == "postgresql" and "creator" not in kwargs:
            kwargs["creator"] = _kept_connections.creator(
                url if isinstance(url, str) else url.render_as_string(hide_password=False)
            )
        engine = create_engine(url, **kwargs)
        if engine._compiled_cache is not None:  # none when the caller turned caching off
            engine._compiled_cache = SharedCompiledCache(store, engine.dialect)  # type: ignore[assignment]
        return engine

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(regdesk_db, "create_engine", create_sharing)
        yield
    _kept_connections.close()


_kept_connections = KeptConnections()


@pytest.fixture(scope="session", autouse=True)
def bench_servers_forked() -> Iterator[None]:
    """The benchmarks' servers that tests run (the soak, the stampede, the webhook servers)
    started from the fork server, as every other test server is (tests/forkserver)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bench_http, "start_server", forkserver.popen)
        yield


# --- the collector ------------------------------------------------------------------------

# A test process holds some 600,000 objects the garbage collector tracks (modules, collected
# tests, fixtures' values), and makes many more short-lived ones: at Python's default threshold
# (a young collection each 700 new objects) it collected 1,900 times in 1,409 tests of the API,
# users, OAuth and hostile input, its full collections walking all of it. A young collection
# each 20,000 (and an older one each 20 of those) took 2 to 3 % less CPU there. Only the test
# processes: the servers tests start, forked or not, keep the service's own settings.
TEST_PROCESS_GC_THRESHOLD = (20_000, 20, 20)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.set_threshold(*TEST_PROCESS_GC_THRESHOLD)


# --- order --------------------------------------------------------------------------------

# The longest files (killed processes, servers under load, browsers), started first: `make
# test` hands whole files to its workers in collection order (`--no-loadscope-reorder`: the
# Makefile's XDIST), and a long file taken last keeps one worker busy while the other has
# nothing left to do.
RUN_FIRST = (
    "tests/faults/",
    "tests/deploy/test_nginx.py",
    "tests/test_soak.py",
    "tests/e2e/",
    "tests/oidc/test_django_site.py",
    "tests/fuzz/",
    "tests/registrations/test_capacity_race.py",
    "tests/test_multiprocess.py",
    "tests/oauth/test_refresh_concurrency.py",
    "tests/webhooks/test_two_processes.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return next(
            (i for i, first in enumerate(RUN_FIRST) if path.startswith(first)), len(RUN_FIRST)
        )

    items.sort(key=rank)  # stable: within a rank, the collection's order


# --- databases ------------------------------------------------------------------------------


def pytest_sessionstart(session: pytest.Session) -> None:
    """Once per run (not per worker): vacuum the catalogs of the PostgreSQL database the tests
    use. Each run makes and drops schemas, and a server without autovacuum (as on the build
    machines) keeps every dead catalog row, which slows every later run's DDL."""
    base = postgres_base_url()
    if base is None or hasattr(session.config, "workerinput"):
        return
    admin = autocommit(base)
    with admin.connect() as conn:
        conn.execute(text(f"VACUUM {', '.join(CATALOGS)}"))
    admin.dispose()


_sqlite_template: SqliteTemplate | None = None
_postgres_schemas: PostgresSchemas | None = None


@pytest.fixture(scope="session", autouse=True)
def _databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """This process's migrated databases (tests/databases.py), made when first asked for."""
    global _sqlite_template, _postgres_schemas
    _sqlite_template = SqliteTemplate(tmp_path_factory.mktemp("template"))
    yield
    if _postgres_schemas is not None:
        _postgres_schemas.close()
    _sqlite_template = _postgres_schemas = None


@contextmanager
def scratch_database_url(backend: str, directory: Path, *, migrated: bool = False) -> Iterator[str]:
    """A database of its own on `backend` (sqlite or postgresql), gone afterwards: empty, or
    `migrated` to the newest schema (a copy of this process's, see tests/databases.py)."""
    global _postgres_schemas
    if backend == "sqlite":
        path = directory / f"{uuid.uuid4().hex}.sqlite3"
        if migrated:
            assert _sqlite_template is not None
            _sqlite_template.copy_to(path)
        yield f"sqlite:///{path}"
        return
    base = postgres_base_url()
    if base is None:
        pytest.skip(f"{POSTGRES_ENV} is not set: PostgreSQL run skipped")
    if _postgres_schemas is None:
        _postgres_schemas = PostgresSchemas(base)
    schemas = _postgres_schemas
    schema = schemas.migrated() if migrated else schemas.empty()
    try:
        yield with_schema(base, schema)
    finally:
        schemas.done(schema, migrated=migrated)


def migrated_sqlite_url(path: Path) -> str:
    """A copy of this process's migrated SQLite database at `path` (a module's database, a live
    server's, whose file a test names itself): its URL."""
    assert _sqlite_template is not None
    _sqlite_template.copy_to(path)
    return f"sqlite:///{path}"


# --- which tests PostgreSQL runs ------------------------------------------------------------

# Every test runs on SQLite. PostgreSQL runs the tests of the data layer, the API and OAuth,
# and of the commands, processes and faults built on them. The pages, and the HTTP rules in
# front of every route (headers, CSRF, body sizes, redirects, sessions), run the same code
# whichever database is behind them: they run on SQLite only, but for a test marked
# `postgresql_too` (a page with a query of its own, such as a search or a filter).
PAGES = (
    "tests/admin/",
    "tests/web/",
    "tests/accounts/test_account_page.py",
    "tests/accounts/test_email_change.py",
    "tests/accounts/test_pages.py",
    "tests/accounts/test_password_change.py",
    "tests/accounts/test_password_reset.py",
    "tests/accounts/test_second_step.py",
    "tests/accounts/test_signup_pages.py",
    "tests/desk/test_badge_pages.py",
    "tests/desk/test_sale_pages.py",
    "tests/desk/test_stats_pages.py",
    "tests/security/test_body_size.py",
    "tests/security/test_csrf.py",
    "tests/security/test_headers.py",
    "tests/security/test_open_redirect.py",
    "tests/security/test_sessions.py",
    "tests/test_schemas.py",
    "tests/webhooks/test_admin_home.py",
)

# The databases a test taking `database_url` runs on (a fixture of its own may take these too).
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def runs_on_sqlite_only(item: pytest.Item | pytest.Function) -> bool:
    path = Path(str(item.path)).resolve().relative_to(Path(__file__).resolve().parents[1])
    return path.as_posix().startswith(PAGES) and item.get_closest_marker("postgresql_too") is None


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A page test's `database_url` (a fixture of any scope) takes SQLite only: marked before
    pytest parametrizes fixtures, so that the mark takes precedence over the fixture's params."""
    if "database_url" in metafunc.fixturenames and runs_on_sqlite_only(metafunc.definition):
        metafunc.definition.add_marker(
            pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
        )


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Migrated when the test takes `engine` (directly or through another fixture)."""
    migrated = "engine" in request.fixturenames
    with scratch_database_url(request.param, tmp_path, migrated=migrated) as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'regdesk.sqlite3'}"


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """A database migrated to the newest schema (see `database_url`)."""
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


class Cli:
    """Runs `regdesk` in-process against one database, the way an organizer types it."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None) -> Result:
        return self.runner.invoke(
            main,
            list(args),
            input=input,
            env={"REGDESK_DATABASE_URL": self.database_url, "REGDESK_SECRET_KEY": None},
            catch_exceptions=False,
        )

    def ok(self, *args: str, input: str | None = None) -> Result:
        result = self(*args, input=input)
        assert result.exit_code == 0, f"regdesk {' '.join(args)}: {result.output}{result.stderr}"
        return result


@pytest.fixture
def cli(engine: Engine, database_url: str) -> Cli:
    return Cli(database_url)


# --- the API -------------------------------------------------------------------------------


# Every test client speaks to https://testserver: that is the instance's public address.
PUBLIC_URL = "https://testserver"


@pytest.fixture
def app(engine: Engine, database_url: str) -> FastAPI:
    return create_app(load_settings(database_url=database_url, public_url=PUBLIC_URL))


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    """The app in-process (its lifespan run), as an HTTPS client sees it."""
    with TestClient(app, base_url="https://testserver") as test_client:
        yield test_client


TOOL_REDIRECT = "https://tool.example.org/callback"


@dataclass(frozen=True)
class Registered:
    client_id: str
    client_secret: str

    @property
    def id(self) -> int:
        return int(self.client_id)


def register_application(
    engine: Engine,
    *,
    name: str,
    service_scopes: str = "",
    obo_scopes: str = "",
    redirect_uris: Sequence[str] = (),
    description: str = "",
    post_logout_redirect_uris: Sequence[str] = (),
    id_token_alg: str = DEFAULT_ID_TOKEN_ALG,
) -> Registered:
    """An application registered as an administrator does it, with its client secret."""
    with write_session(engine) as session:
        application, secret = create_application(
            session,
            Actor("test"),
            name=name,
            description=description,
            redirect_uris=redirect_uris,
            service_scopes=service_scopes,
            obo_scopes=obo_scopes,
            post_logout_redirect_uris=post_logout_redirect_uris,
            id_token_alg=id_token_alg,
        )
    return Registered(str(application.id), secret)


class Apps:
    """Registers applications and gets tokens for them, as tests need them."""

    def __init__(self, engine: Engine, client: TestClient) -> None:
        self.engine = engine
        self.client = client

    def register(
        self,
        *,
        service_scopes: str = "",
        obo_scopes: str = "",
        redirect_uris: Sequence[str] = (),
        name: str = "Tool",
    ) -> Registered:
        if obo_scopes and not redirect_uris:
            redirect_uris = [TOOL_REDIRECT]  # where its users come back to (mint needs one)
        return register_application(
            self.engine,
            name=name,
            service_scopes=service_scopes,
            obo_scopes=obo_scopes,
            redirect_uris=redirect_uris,
        )

    def service_token(self, scopes: str, *, request_scope: str | None = None) -> str:
        """A client_credentials token from the token endpoint, for a new application."""
        registered = self.register(service_scopes=scopes)
        form = {"grant_type": "client_credentials"}
        if request_scope is not None:
            form["scope"] = request_scope
        response = self.client.post(
            "/api/oauth/token",
            data=form,
            auth=(registered.client_id, registered.client_secret),
        )
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token

    def mint(self, application: Registered, scope: str, *, user_id: int | None = None) -> str:
        """A token got the way a tool gets one: client_credentials at the token endpoint, or,
        for a user's token, the consent the authorization page gives (the user must be able
        to grant `scope`) exchanged for tokens there."""
        auth = (application.client_id, application.client_secret)
        if user_id is None:
            form = {"grant_type": "client_credentials", "scope": scope}
        else:
            with write_session(self.engine) as session:
                redirect_uri = session.get(Application, application.id).redirect_uris[0]
                params = [
                    ("client_id", application.client_id),
                    ("response_type", "code"),
                    ("redirect_uri", redirect_uri),
                    ("scope", scope),
                ]
                request = check_authorization_request(session, params, PUBLIC_URL)
                assert not scopes_user_lacks(session, user_id, request.scopes), scope
                location = approve(session, Actor("test"), request, user_id, PUBLIC_URL)
            code = parse_qs(urlsplit(location).query)["code"][0]
            form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        response = self.client.post("/api/oauth/token", data=form, auth=auth)
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token


@pytest.fixture
def apps(engine: Engine, client: TestClient) -> Apps:
    return Apps(engine, client)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
