"""A PostgreSQL cluster of the test's own, to restart at will: the shared server on :5432 is
never touched. Made with the installed PostgreSQL binaries (initdb, pg_ctl) in a directory of
its own on a free port; as root, they run as the `postgres` user, since initdb refuses root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from sqlalchemy import text

from regdesk.db import make_engine
from tests.helpers import free_port

BINARIES = Path("/usr/lib/postgresql")  # Debian's layout: /usr/lib/postgresql/<major>/bin


def postgres_bin() -> Path:
    """The newest installed PostgreSQL's binaries."""
    found = sorted(
        (p for p in BINARIES.glob("*/bin") if (p / "pg_ctl").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    assert found, f"no PostgreSQL server binaries under {BINARIES} (apt-get install postgresql)"
    return found[-1]


class Cluster:
    """One throwaway cluster: `initdb` and `pg_ctl` on a temporary directory and a free port."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        # Not under pytest's tmp_path: that is private to root and the server runs as postgres.
        self.directory = Path(tempfile.mkdtemp(prefix="regdesk-faults-pg-"))
        self.data = self.directory / "data"
        self.log = self.directory / "server.log"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.directory, "postgres", "postgres")

    def start(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        # In the cluster's own configuration, so that every start and restart uses it (and
        # never the default port, which is the shared server's).
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(
                f"port = {self.port}\n"
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.directory}'\n"
                "fsync = off\n"
                "shared_buffers = 16MB\n"
                "max_connections = 40\n"
            )
        self.pg_ctl("start")

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{program}: {done.stdout}{done.stderr}\n{self.tail()}"

    def pg_ctl(self, action: str, mode: str | None = None) -> None:
        """`pg_ctl restart|stop|start [-m mode]`, waiting for it to be done."""
        mode_args = ["-m", mode] if mode else []
        # The server's output to the log: to a pipe, it would hold pg_ctl's caller forever.
        log = ["-l", str(self.log)] if action in ("start", "restart") else []
        self._run("pg_ctl", action, "-D", str(self.data), *mode_args, *log, "-w", "-t", "60")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        engine = make_engine(self.url(), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()
        return self.url(name)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def destroy(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self.pg_ctl("stop", "immediate")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
