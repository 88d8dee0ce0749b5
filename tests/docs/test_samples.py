"""Every sample of the manual runs against a live server, page by page and in order, and prints
what the page shows (issue 22). The marks are read by tests/docs/manual.py.

Each page runs as one bash script, in a scratch directory of its own (with `.venv` linked
there, as in the regdesk directory, and the files earlier pages saved), against one
`regdesk serve` on a database holding the demo; `http://127.0.0.1:8000` in a sample is that
server. Where a sample prints `Open URL in a browser`, the test is the person at the browser:
it signs in as the demo attendee and authorizes. On SQLite only: what the samples call is
tested on both databases by the API's own tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urljoin

import pytest

from tests import forkserver, http_calls
from tests.docs.manual import PROGRAMS, ROOT, Block, blocks, pages
from tests.helpers import live_server
from tests.web.support import forms

MAKE_RUN_ADDRESS = "http://127.0.0.1:8000"
PAGE_SECONDS = 120
MARKER = "@@regdesk-sample {}@@"
BROWSER_PROMPT = re.compile(r"Open (\S+) in a browser")
VENV = Path(sys.executable).parents[1]


# --- what the manual holds -------------------------------------------------------------------


def runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.mark == "run" and b.title is None]


PAGES = [page for page in pages() if runnable(page)]


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def test_every_program_says_whether_it_runs() -> None:
    unmarked = [
        b.where
        for page in pages()
        for b in blocks(page)
        if b.language in PROGRAMS and b.mark is None
    ]
    assert not unmarked, (
        "samples marked neither <!-- run --> nor <!-- not run: why -->: " + ", ".join(unmarked)
    )


def test_every_output_follows_a_sample_that_runs() -> None:
    for page in pages():
        found = blocks(page)
        for before, block in zip([None, *found], found, strict=False):
            if block.mark == "output":
                assert before is not None, block.where
                assert before.mark == "run", block.where
                assert block.language == "json", f"{block.where}: an output block is JSON"
                json.loads(block.text)  # the page shows a real document


def test_the_manual_has_samples_to_run() -> None:
    """The walk is not vacuous: the guides' pages run."""
    ran = {page_id(page) for page in PAGES}
    assert {"docs/getting-started.md", "docs/integrators/users.md"} <= ran
    assert sum(len(runnable(page)) for page in PAGES) >= 30


# --- the server ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Manual:
    base: str
    database_url: str
    attendee: tuple[str, str]  # the demo's login and password
    venv: Path  # what the samples' `.venv` is (_venv_view)


@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Manual]:
    directory = tmp_path_factory.mktemp("manual")
    database_url = f"sqlite:///{directory / 'regdesk.sqlite3'}"
    demo = forkserver.popen(
        [str(VENV / "bin" / "regdesk"), "demo", "--users", "100", "--volunteers", "30", "--json"],
        env={**_clean_environment(), "REGDESK_DATABASE_URL": database_url},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = demo.communicate(timeout=PAGE_SECONDS)
    assert demo.returncode == 0, err.decode()
    logins = {login["username"]: login["password"] for login in json.loads(out)["logins"]}
    settings = {
        "REGDESK_WEBHOOKS_ALLOW_PRIVATE": "on",  # the webhooks page's loopback receiver
        # That page's event is written by `regdesk import`, another process, whose commit
        # wakes no server: it is sent at the server's next look, in a moment rather than 5 s.
        "REGDESK_OUTBOX_POLL_SECONDS": "0.2",
    }
    with live_server(database_url, settings) as base:
        yield Manual(base, database_url, ("attendee", logins["attendee"]), _venv_view(directory))


def _venv_view(directory: Path) -> Path:
    """The virtual environment as the samples see it: every part of it linked, but for
    `bin/regdesk`, which is the fork server's stand-in for it (tests/forkserver): a sample's
    `.venv/bin/regdesk` answers in a few tenths of a second rather than two."""
    view = directory / "venv"
    view.mkdir()
    for entry in VENV.iterdir():
        if entry.name != "bin":
            (view / entry.name).symlink_to(entry)
    (view / "bin").mkdir()
    for entry in (VENV / "bin").iterdir():
        if entry.name != "regdesk":
            (view / "bin" / entry.name).symlink_to(entry)
    forkserver.stand_in(VENV / "bin" / "regdesk", view / "bin" / "regdesk")
    return view


# --- running a page --------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_the_samples_of_a_page_run_and_print_what_it_shows(
    page: Path, manual: Manual, tmp_path: Path
) -> None:
    _prepare(tmp_path, page, manual)
    found = blocks(page)
    samples = runnable(page)
    run = _run(_script(samples, manual.base), tmp_path, manual)
    outputs = _split(run.stdout, len(samples))
    errors = _split(run.stderr, len(samples))
    if run.failed_at is not None:
        sample = samples[run.failed_at]
        pytest.fail(
            f"{sample.where}: the sample failed ({run.reason})\n--- it printed:\n"
            f"{outputs[run.failed_at]}\n--- and on stderr:\n{errors[run.failed_at]}"
        )
    assert not run.browser_errors, run.browser_errors
    for number, sample in enumerate(samples):
        shown = _output_after(found, sample)
        if shown is None:
            continue
        printed = _last_json(outputs[number])
        assert printed is not None, f"{sample.where}: printed no JSON:\n{outputs[number]}"
        wrong = shape_differences(json.loads(shown.text), printed)
        assert not wrong, f"{sample.where}: prints another shape than {shown.where}: {wrong}"


def _prepare(directory: Path, page: Path, manual: Manual) -> None:
    """The scratch directory as the regdesk directory looks to a reader at this page: `.venv`,
    and the files this page and the ones before it saved."""
    (directory / ".venv").symlink_to(manual.venv)
    everything = pages()
    for earlier in everything[: everything.index(page) + 1]:
        for block in blocks(earlier):
            if block.mark == "run" and block.title is not None:
                text = block.text.replace(MAKE_RUN_ADDRESS, manual.base)
                (directory / block.title).write_text(text + "\n", encoding="utf-8")


def _script(samples: list[Block], base: str) -> str:
    marker = MARKER.format("%s")
    lines = [
        "set -euo pipefail",
        f"__sample() {{ printf '\\n{marker}\\n' \"$1\"; printf '\\n{marker}\\n' \"$1\" >&2; }}",
    ]
    for number, sample in enumerate(samples):
        text = sample.text.replace(MAKE_RUN_ADDRESS, base)
        lines.append(f"__sample {number}")
        if sample.language == "python":
            lines += ["python3 - <<'REGDESK_SAMPLE_END'", text, "REGDESK_SAMPLE_END"]
        elif sample.language == "console":
            lines.append(_console_commands(text))
        else:
            lines.append(text)
    lines.append("__sample end")
    return "\n".join(lines) + "\n"


def _console_commands(text: str) -> str:
    """The `$ ` lines of a console block (and their continuations), without the prompt."""
    commands: list[str] = []
    going_on = False
    for line in text.splitlines():
        if line.startswith("$ ") or going_on:
            commands.append(line.removeprefix("$ "))
            going_on = line.endswith("\\")
    return "\n".join(commands)


@dataclass
class Run:
    stdout: str = ""
    stderr: str = ""
    failed_at: int | None = None
    reason: str = ""
    browser_errors: list[str] = field(default_factory=list)


def _run(script: str, directory: Path, manual: Manual) -> Run:
    (directory / ".samples.sh").write_text(script, encoding="utf-8")
    environment = {
        **_clean_environment(),
        "PATH": f"{manual.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "REGDESK_DATABASE_URL": manual.database_url,
        "PYTHONUNBUFFERED": "1",
        "TMPDIR": str(directory),
    }
    process = subprocess.Popen(
        ["bash", ".samples.sh"],
        cwd=directory,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its background processes (a receiver) end with it
    )
    run = Run()
    assert process.stdout is not None
    assert process.stderr is not None
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=_read, args=(process.stdout, out, manual, run, process)),
        threading.Thread(target=_read, args=(process.stderr, err, manual, run, process)),
    ]
    for reader in readers:
        reader.start()
    try:
        status = process.wait(timeout=PAGE_SECONDS)
    except subprocess.TimeoutExpired:
        status = None
    _end(process)
    for reader in readers:
        reader.join(timeout=10)
    run.stdout, run.stderr = "".join(out), "".join(err)
    if status != 0:
        seen = re.findall(MARKER.format(r"(\d+)"), run.stdout)
        run.failed_at = int(seen[-1]) if seen else 0
        run.reason = f"exit status {status}" if status is not None else f"over {PAGE_SECONDS} s"
    return run


def _read(
    stream: IO[str], into: list[str], manual: Manual, run: Run, process: subprocess.Popen[str]
) -> None:
    for line in stream:
        into.append(line)
        prompt = BROWSER_PROMPT.search(line)
        if prompt:
            threading.Thread(
                target=_be_the_person, args=(prompt[1], manual, run, process), daemon=True
            ).start()


def _end(process: subprocess.Popen[str]) -> None:
    """The page's shell and whatever it left running in the background."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=10)


def _clean_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}


# --- the person at the browser ---------------------------------------------------------------


def _be_the_person(url: str, manual: Manual, run: Run, process: subprocess.Popen[str]) -> None:
    """Sign in as the demo attendee and authorize, as a browser would, up to the redirect back
    to the tool, which is delivered to the sample waiting for it."""
    login, password = manual.attendee
    try:
        with http_calls.client(timeout=10) as browser:
            response = browser.get(url)
            for _ in range(10):
                if response.is_redirect:
                    target = urljoin(str(response.url), response.headers["location"])
                    if not target.startswith(manual.base):
                        browser.get(target)  # the tool's own address: what the sample awaits
                        return
                    response = browser.get(target)
                    continue
                offered = {form.action: form for form in forms(response.text)}
                if "/login" in offered:
                    fields = {**offered["/login"].fields, "username": login, "password": password}
                    response = browser.post(f"{manual.base}/login", data=fields)
                elif "/oauth/authorize" in offered:
                    fields = {**offered["/oauth/authorize"].fields, "decision": "authorize"}
                    response = browser.post(f"{manual.base}/oauth/authorize", data=fields)
                else:
                    raise AssertionError(f"a page with no way on: {response.status_code} {url}")
            raise AssertionError("more than ten steps to authorize")
    except Exception as error:  # the sample waits for nothing more: end it
        run.browser_errors.append(f"{shlex.quote(url)}: {error!r}")
        _end(process)


# --- what a sample printed -------------------------------------------------------------------


def _split(text: str, count: int) -> list[str]:
    """What each sample printed, between the markers the script prints."""
    parts = re.split(r"\n?" + re.escape(MARKER).replace(r"\{\}", r"(\d+|end)") + r"\n", text)
    printed = ["" for _ in range(count)]
    for number, part in zip(parts[1::2], parts[2::2], strict=False):
        if number.isdigit():
            printed[int(number)] = part
    return printed


def _output_after(found: list[Block], sample: Block) -> Block | None:
    following = found[found.index(sample) + 1 :]
    return following[0] if following and following[0].mark == "output" else None


def _last_json(text: str) -> Any:
    """The last JSON document printed: the lines from the last one that starts one."""
    lines = text.rstrip().splitlines()
    for start in range(len(lines) - 1, -1, -1):
        try:
            return json.loads("\n".join(lines[start:]))
        except ValueError:
            continue
    return None


def shape_differences(shown: Any, printed: Any, path: str = "$") -> list[str]:
    """Where `printed` differs in shape from what the page `shown`: an object's members (all
    of them, unless the page shows `"...": "..."` among them), a list's items (its first),
    each value's type; null goes with anything (a member that may be null)."""
    if shown is None or printed is None:
        return []
    if isinstance(shown, dict):
        if not isinstance(printed, dict):
            return [f"{path}: an object is shown, {type(printed).__name__} printed"]
        some = shown.get("...") == "..."
        named = set(shown) - {"..."} if some else set(shown)
        problems = [f"{path}.{key}: shown, not printed" for key in sorted(named - set(printed))]
        if not some:
            problems += [
                f"{path}.{key}: printed, not shown" for key in sorted(set(printed) - named)
            ]
        for key in sorted(named & set(printed)):
            problems += shape_differences(shown[key], printed[key], f"{path}.{key}")
        return problems
    if isinstance(shown, list):
        if not isinstance(printed, list):
            return [f"{path}: a list is shown, {type(printed).__name__} printed"]
        if shown and printed:
            return shape_differences(shown[0], printed[0], f"{path}[0]")
        return []
    kinds = (
        (bool,) if isinstance(shown, bool) else (str,) if isinstance(shown, str) else (int, float)
    )
    if not isinstance(printed, kinds) or (kinds == (int, float) and isinstance(printed, bool)):
        return [f"{path}: {type(shown).__name__} shown, {type(printed).__name__} printed"]
    return []


def test_shapes_are_compared_member_by_member() -> None:
    """The comparison itself: what it lets through and what it does not."""
    assert shape_differences({"a": 1, "b": [{"c": "x"}]}, {"a": 2, "b": [{"c": "y"}]}) == []
    assert shape_differences({"a": 1}, {"a": 1, "b": 2}) == ["$.b: printed, not shown"]
    assert shape_differences({"a": 1, "...": "..."}, {"a": 1, "b": 2}) == []
    assert shape_differences({"a": 1}, {}) == ["$.a: shown, not printed"]
    assert shape_differences({"a": "x"}, {"a": 1}) == ["$.a: str shown, int printed"]
    assert shape_differences({"a": 1}, {"a": True}) == ["$.a: int shown, bool printed"]
    assert shape_differences({"a": None}, {"a": {"b": 1}}) == []
    assert shape_differences([{"a": 1}], [{"b": 1}]) != []
