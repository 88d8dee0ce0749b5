"""Where the workers of one `regdesk serve` write their series, so that a scrape adds them up
(Prometheus's client in multiprocess mode: a file per worker process in one directory).

`regdesk serve` makes a fresh directory for each start, before any worker starts, names it in
PROMETHEUS_MULTIPROC_DIR (the workers inherit it), and removes it when the server stops: the
counts of a start never mix with another's, nor with another server's on the same host. A
server killed outright cannot remove its own: the next start removes the directories whose
server is gone (each is named after its server's process id). A process started otherwise
(the tests' app, a bare uvicorn) keeps its series in its memory.

The series are made in the mode this variable names when the first of them is made
(metrics.series), whenever Prometheus's client was imported.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENVIRONMENT = "PROMETHEUS_MULTIPROC_DIR"
PREFIX = "regdesk-metrics-"  # then the server's process id, "-", and a random part


def directory() -> Path | None:
    """The directory this process's series go to; None: they stay in its memory."""
    named = os.environ.get(ENVIRONMENT)
    return Path(named) if named else None


@contextmanager
def per_server_start() -> Iterator[Path]:
    """A new, empty directory for the series of this server start, named in the environment
    for its workers; removed afterwards."""
    _remove_those_of_servers_gone()
    made = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    previous = os.environ.get(ENVIRONMENT)
    os.environ[ENVIRONMENT] = str(made)
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)
        if previous is None:
            os.environ.pop(ENVIRONMENT, None)
        else:
            os.environ[ENVIRONMENT] = previous


def _remove_those_of_servers_gone() -> None:
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        pid = folder.name.removeprefix(PREFIX).partition("-")[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
