"""Wall time of `regdesk demo --users 100000 --volunteers 20000`, on each database.

Runs the real command in a subprocess on a fresh database: SQLite always, PostgreSQL when
REGDESK_TEST_POSTGRES_URL is set (in a schema of its own, dropped afterwards).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import text

from regdesk.db import make_engine

USERS = int(os.environ.get("BENCH_DEMO_USERS", "100000"))
VOLUNTEERS = int(os.environ.get("BENCH_DEMO_VOLUNTEERS", "20000"))


def _time_demo(database_url: str) -> float:
    regdesk = Path(sys.executable).with_name("regdesk")
    env = {**os.environ, "REGDESK_DATABASE_URL": database_url}
    # Migrate first, so that only the load itself is timed.
    subprocess.run([str(regdesk), "db", "upgrade"], env=env, check=True, capture_output=True)
    started = time.perf_counter()
    subprocess.run(
        [str(regdesk), "demo", "--users", str(USERS), "--volunteers", str(VOLUNTEERS), "--json"],
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def run() -> dict[str, object]:
    results: dict[str, object] = {"users": USERS, "volunteers": VOLUNTEERS}
    with tempfile.TemporaryDirectory() as folder:
        results["sqlite_seconds"] = round(_time_demo(f"sqlite:///{folder}/bench.sqlite3"), 2)
    base = os.environ.get("REGDESK_TEST_POSTGRES_URL")
    if base:
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        admin = make_engine(base)
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        try:
            separator = "&" if "?" in base else "?"
            url = f"{base}{separator}options={quote(f'-csearch_path={schema}')}"
            results["postgresql_seconds"] = round(_time_demo(url), 2)
        finally:
            with admin.begin() as connection:
                connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    print(f"demo load, {USERS} users and {VOLUNTEERS} volunteers:")
    for name in ("sqlite_seconds", "postgresql_seconds"):
        if name in results:
            print(f"  {name.split('_')[0]:<11} {results[name]:>7} s")
    return results
