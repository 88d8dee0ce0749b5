"""The tests' fork server (tests/forkserver): a process started from it is the script run
with what the test gave, as `subprocess.Popen` would run it, in a process of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkserver

SCRIPT = """\
import json, os, sys
print(json.dumps({
    "argv": sys.argv,
    "cwd": os.getcwd(),
    "setting": os.environ.get("FORKED_SETTING"),
    "inherited": "PATH" in os.environ,
    "main": sys.modules["__main__"].__file__,
    "path0": sys.path[0],
    "alembic": "alembic" in sys.modules,
}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""

SLEEPER = "import time\ntime.sleep(60)\n"


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "tell"
    path.parent.mkdir()
    path.write_text(SCRIPT)
    return path


def run(script: Path, *args: str, cwd: Path) -> tuple[dict[str, object], str, int]:
    process = forkserver.popen(
        [str(script), *args],
        env={"FORKED_SETTING": "given"},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = process.communicate(timeout=30)
    return json.loads(out), err.decode(), process.returncode or 0


def test_the_child_runs_the_script_with_the_given_arguments_environment_and_directory(
    script: Path, tmp_path: Path
) -> None:
    told, err, status = run(script, "3", "more", cwd=tmp_path)
    assert status == 3
    assert err == "to stderr\n"
    assert told["argv"] == [str(script), "3", "more"]
    assert told["cwd"] == str(tmp_path)
    # The environment given, whole: nothing of the test worker's or the fork server's.
    assert told["setting"] == "given"
    assert told["inherited"] is False
    # As `python script`: the script is __main__, its directory first on the path.
    assert told["main"] == str(script)
    assert told["path0"] == str(script.parent)
    # Alembic is not imported ahead: a server on a current database never loads it.
    assert told["alembic"] is False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signalled_child_reports_the_signal_as_popen_does(tmp_path: Path, sig: int) -> None:
    sleeper = tmp_path / "sleeper"
    sleeper.write_text(SLEEPER)
    process = forkserver.popen([str(sleeper)], stdout=subprocess.DEVNULL)
    assert process.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.2)
    process.send_signal(sig)
    assert process.wait(timeout=30) == -sig
    assert process.poll() == -sig


def test_the_regdesk_console_script_answers(tmp_path: Path) -> None:
    regdesk = Path(sys.executable).with_name("regdesk")
    process = forkserver.popen(
        [str(regdesk), "--help"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert out.startswith(b"Usage: regdesk ")


def test_a_stand_in_runs_the_script_as_the_script_would_run(script: Path, tmp_path: Path) -> None:
    """What a bash script of the manual calls by path: arguments, environment, directory,
    streams and exit status pass through it."""
    stand_in = tmp_path / "stand-in"
    forkserver.stand_in(script, stand_in)
    done = subprocess.run(
        [str(stand_in), "4"],
        env={"FORKED_SETTING": "given"},
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 4
    assert done.stderr == b"to stderr\n"
    told = json.loads(done.stdout)
    assert told["argv"] == [str(script), "4"]
    assert told["cwd"] == str(tmp_path)
    assert told["setting"] == "given"
    assert told["main"] == str(script)


def test_a_signal_to_a_stand_in_reaches_the_process_it_stands_for(tmp_path: Path) -> None:
    """`kill` of the stand-in (a page's shell ending its background server) ends what it
    started, and the stand-in ends by the same signal."""
    sleeper = tmp_path / "sleeper"
    sleeper.write_text("import os, sys, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)\n")
    stand_in = tmp_path / "stand-in"
    forkserver.stand_in(sleeper, stand_in)
    process = subprocess.Popen([str(stand_in)], stdout=subprocess.PIPE)
    assert process.stdout is not None
    child = int(process.stdout.readline())
    process.terminate()
    assert process.wait(timeout=30) == -signal.SIGTERM
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
