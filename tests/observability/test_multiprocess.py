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
