"""The fault tests' summary at the end of the run: the faults injected, from build/faults.json
(tests/faults/support.py writes it, merged across runs and pytest-xdist workers)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.faults.support import IN_THIS_PROCESS, LEDGER, read_ledger

HERE = Path(__file__).resolve().parent


def describe(tests: Mapping[str, Any]) -> Iterable[str]:
    for test, entry in tests.items():
        kinds: dict[str, int] = {}
        for fault in entry["faults"]:
            kinds[fault["kind"]] = kinds.get(fault["kind"], 0) + 1
        yield f"{test}: " + (", ".join(f"{n} x {kind}" for kind, n in kinds.items()) or "none")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    ledger = read_ledger()
    if not ledger:
        return
    terminalreporter.section("faults injected")
    for line in describe(ledger["tests"]):
        terminalreporter.write_line(line)
    by_database = ", ".join(f"{db} {n}" for db, n in ledger["by_database"].items())
    terminalreporter.write_line(
        f"{ledger['faults_injected']} faults injected ({by_database}), in {LEDGER}"
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist the summary above is printed by the controller only if it loaded this
    file, which it does when tests/faults is named on the command line; otherwise (`make
    test`) each worker tells what it injected itself."""
    config = session.config
    if not hasattr(config, "workerinput") or not IN_THIS_PROCESS:
        return
    named = (
        Path(config.invocation_params.dir, arg.split("::")[0]).resolve() for arg in config.args
    )
    if any(path == HERE or HERE in path.parents for path in named):
        return
    tests = {test: {"faults": ledger.faults} for test, ledger in IN_THIS_PROCESS.items()}
    lines = "\n".join(describe(tests))
    print(f"\nfaults injected here (all runs: {LEDGER}):\n{lines}", file=sys.__stderr__)
