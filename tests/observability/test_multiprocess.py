"""The series' directory of a `regdesk serve` start (observability/multiprocess.py): new and
empty for each start, named in the environment before Prometheus's client is imported, gone
afterwards, and those of servers killed outright removed at the next start."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from regdesk.observability import multiprocess


def test_each_start_has_a_new_directory_gone_afterwards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv(multiprocess.ENVIRONMENT, raising=False)
    gone = tmp_path / f"{multiprocess.PREFIX}999999999-abc"  # beyond any process id
    running = tmp_path / f"{multiprocess.PREFIX}{os.getpid()}-def"
    for folder in (gone, running):
        folder.mkdir()
        (folder / "counter_1.db").write_bytes(b"x")
    with multiprocess.per_server_start() as folder:
        assert multiprocess.directory() == folder
        assert folder.parent == tmp_path
        assert not list(folder.iterdir())
        assert not gone.exists(), "its server is gone: removed at this start"
        assert running.exists(), "its server runs: left alone"
    assert not folder.exists()
    assert multiprocess.directory() is None


def test_the_command_line_does_not_import_prometheus_client() -> None:
    """The client picks its mode once, when first imported: `regdesk serve` names the
    directory before that, so nothing the command line imports may import it."""
    code = "import sys, regdesk.cli.serve; print('prometheus_client' in sys.modules)"
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert found.strip() == "False"


FORKED_WORKERS = """
import os, sys
from regdesk.observability import metrics
metrics.request_answered("/a", "GET", 200, 0.001)  # the parent's series, in its own file
child = os.fork()
if child == 0:
    metrics.request_answered("/a", "GET", 200, 0.001)
    metrics.request_answered("/a", "GET", 200, 0.001)
    os._exit(0)
os.waitpid(child, 0)
print(os.getpid(), child)
"""


def test_a_forked_worker_writes_its_series_in_a_file_of_its_own(tmp_path: Path) -> None:
    """The client tells processes apart by their id, which regdesk keeps rather than asks the
    system for at each count (metrics.process_id): a fork must still get a file of its own."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector
    from prometheus_client.parser import text_string_to_metric_families

    env = {**os.environ, multiprocess.ENVIRONMENT: str(tmp_path)}
    printed = subprocess.run(
        [sys.executable, "-c", FORKED_WORKERS], env=env, capture_output=True, text=True, check=True
    ).stdout
    parent, child = printed.split()
    assert sorted(p.name for p in tmp_path.glob("counter_*.db")) == sorted(
        [f"counter_{parent}.db", f"counter_{child}.db"]
    )
    for pid, expected in ((parent, 1.0), (child, 2.0)):
        alone = tmp_path / pid
        alone.mkdir()
        (alone / f"counter_{pid}.db").write_bytes((tmp_path / f"counter_{pid}.db").read_bytes())
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))  # type: ignore[no-untyped-call]
        counted = [
            sample.value
            for family in text_string_to_metric_families(generate_latest(registry).decode())
            for sample in family.samples
            if sample.name == "regdesk_http_requests_total"
        ]
        assert counted == [expected]
