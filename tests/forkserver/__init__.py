"""The tests' `regdesk` processes, forked from one that has already imported the service.

Starting `regdesk serve` from its console script costs about 2.5 s of CPU on these machines,
nearly all of it Python importing the service, and the suite starts about a hundred servers.
Here one process per test worker (the fork server) imports the service's libraries once, and
each start is a fork of it that runs the console script itself (`runpy`, as `python script`
does) with the argument vector, environment, working directory and standard streams the test
gives. What runs is the same code from the script's first line on, in a real process of its own
to signal, stop, kill -9 and wait for; it answers in a few tenths of a second.

What the fork server imports ahead is what a server would import anyway: the command line and
the app, whose routes it builds as a server's start does (app._routes), so that each server it
forks shares them. Prometheus's client comes with the app: the mode PROMETHEUS_MULTIPROC_DIR
names is taken when a server makes its first series (observability/metrics.py), after its start
has set it. Alembic never is: a server on a current database does not load it.
`REGDESK_TEST_FORK=off` starts every process the ordinary way.

`popen` stands for `subprocess.Popen` with the arguments the tests use; `stand_in` writes an
executable that asks the fork server in the same way, for a program the tests run that calls the
console script by its path itself (the manual's samples, in bash).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

MESSAGE_BYTES = 1 << 20
SWITCH = "REGDESK_TEST_FORK"


class Process(Protocol):
    """What the tests use of `subprocess.Popen`."""

    args: Any
    pid: int
    returncode: int | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]: ...
    def send_signal(self, sig: int) -> None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


def popen(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    stdin: int | IO[Any] | None = None,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
) -> Process:
    """`subprocess.Popen(args, ...)` for a Python script (`args[0]`, e.g. the `regdesk` console
    script), forked from the fork server; the ordinary way when REGDESK_TEST_FORK=off."""
    if os.environ.get(SWITCH, "on") == "off":
        return subprocess.Popen(
            list(args), env=env, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr
        )
    return _client().spawn(list(args), env, cwd, (stdin, stdout, stderr))


def stand_in(script: Path, at: Path) -> None:
    """Write at `at` an executable that runs `script` (a console script) as `popen` does, for
    programs the tests run that call it by path themselves (a bash script of the manual): it
    passes on its arguments, environment, directory and streams, passes on the signals it gets
    (SIGTERM, SIGINT, SIGHUP), and ends as the forked process did. Where REGDESK_TEST_FORK=off,
    a link to `script`."""
    if os.environ.get(SWITCH, "on") == "off":
        at.symlink_to(script)
        return
    at.write_text(
        f"#!{sys.executable} -S\n"
        f"SCRIPT = {str(script)!r}\n"
        f"ADDRESS = {_client().address!r}\n"
        f"MESSAGE_BYTES = {MESSAGE_BYTES}\n" + STAND_IN
    )
    at.chmod(0o755)


STAND_IN = """
import json, os, signal, socket, sys

# A signal that comes before the process is started waits (blocked) until it can be passed on:
# the process may already be writing to the streams it shares with this one.
PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
signal.pthread_sigmask(signal.SIG_BLOCK, PASSED_ON)
connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
connection.connect(ADDRESS)
request = {"argv": [SCRIPT, *sys.argv[1:]], "env": dict(os.environ), "cwd": os.getcwd()}
socket.send_fds(connection, [json.dumps(request).encode()], [0, 1, 2])
pid = json.loads(connection.recv(MESSAGE_BYTES))["started"]
for sig in PASSED_ON:
    signal.signal(sig, lambda number, _: os.kill(pid, number))
signal.pthread_sigmask(signal.SIG_UNBLOCK, PASSED_ON)
while True:
    said = json.loads(connection.recv(MESSAGE_BYTES) or b'{"exited": 0, "status": 256}')
    if said.get("exited") in (pid, 0):
        code = os.waitstatus_to_exitcode(said["status"])
        break
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


# --- the tests' side ----------------------------------------------------------------------


class Forked:
    """A process the fork server started for this one: `subprocess.Popen`'s ways to watch and
    signal it. Its exit status comes from the fork server, its parent."""

    def __init__(
        self, client: _Client, args: list[str], pid: int, pipes: list[IO[bytes] | None]
    ) -> None:
        self._client = client
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self.stdin, self.stdout, self.stderr = pipes

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._client.status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._client.wait_for_an_exit(left)
        return code

    def communicate(self, timeout: float | None = None) -> tuple[bytes | None, bytes | None]:
        """Everything the PIPEs of stdout and stderr carry, then the exit (no input)."""
        read: dict[str, bytes] = {}

        def drain(name: str, pipe: IO[bytes]) -> None:
            read[name] = pipe.read()
            pipe.close()

        readers = [
            threading.Thread(target=drain, args=(name, pipe), daemon=True)
            for name, pipe in (("out", self.stdout), ("err", self.stderr))
            if pipe is not None
        ]
        for reader in readers:
            reader.start()
        self.wait(timeout)
        for reader in readers:
            reader.join(timeout)
        return read.get("out"), read.get("err")

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> Forked:
        return self

    def __exit__(self, *_: object) -> None:
        for pipe in (self.stdin, self.stdout, self.stderr):
            if pipe is not None:
                pipe.close()
        self.wait()


class _Client:
    """This test worker's connection to its fork server, started on the first spawn."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        root = Path(__file__).resolve().parents[2]
        self.directory = tempfile.TemporaryDirectory(prefix="regdesk-forkserver-")
        self.address = str(Path(self.directory.name) / "socket")
        self.server = subprocess.Popen(
            [sys.executable, "-m", "tests.forkserver.server", str(theirs.fileno()), self.address],
            pass_fds=[theirs.fileno()],
            cwd=root,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.socket = ours
        self.lock = threading.Lock()  # one spawn at a time
        self.changed = threading.Condition()
        self.exits: dict[int, int] = {}
        self.started: list[int] = []
        self.reader = threading.Thread(target=self._read, name="forkserver", daemon=True)
        self.reader.start()

    def spawn(
        self,
        args: list[str],
        env: Mapping[str, str] | None,
        cwd: str | Path | None,
        streams: tuple[int | IO[Any] | None, int | IO[Any] | None, int | IO[Any] | None],
    ) -> Forked:
        fds, close, pipes = _stream_fds(streams)
        request = {
            "argv": args,
            "env": dict(os.environ if env is None else env),
            "cwd": str(cwd or os.getcwd()),
        }
        try:
            with self.lock, self.changed:
                socket.send_fds(self.socket, [json.dumps(request).encode()], fds)
                while not self.started:
                    assert self.server.poll() is None, "the fork server ended"
                    self.changed.wait(1)
                pid = self.started.pop()
        finally:
            for fd in close:
                os.close(fd)
        return Forked(self, args, pid, pipes)

    def status(self, pid: int) -> int | None:
        with self.changed:
            return self.exits.get(pid)

    def wait_for_an_exit(self, timeout: float | None) -> None:
        with self.changed:
            self.changed.wait(0.5 if timeout is None else min(timeout, 0.5))

    def _read(self) -> None:
        while True:
            try:
                message = self.socket.recv(MESSAGE_BYTES)
            except OSError:
                return
            if not message:
                return
            said = json.loads(message)
            with self.changed:
                if "started" in said:
                    self.started.append(said["started"])
                else:
                    self.exits[said["exited"]] = os.waitstatus_to_exitcode(said["status"])
                self.changed.notify_all()

    def close(self) -> None:
        # Shut down first: a close alone does not end the reader's recv, which keeps the
        # socket open, so the fork server would see no end and the wait would run out.
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.server.wait(timeout=5)
        self.directory.cleanup()


_client_lock = threading.Lock()
_the_client: _Client | None = None


def _client() -> _Client:
    global _the_client
    with _client_lock:
        if _the_client is None or _the_client.server.poll() is not None:
            _the_client = _Client()
            atexit.register(_the_client.close)
        return _the_client


def _stream_fds(
    streams: tuple[int | IO[Any] | None, int | IO[Any] | None, int | IO[Any] | None],
) -> tuple[list[int], list[int], list[IO[bytes] | None]]:
    """The three descriptors the child gets as 0, 1 and 2; those to close here once sent; and
    the ends of PIPEs this process reads or writes (`Popen.stdin`, `.stdout`, `.stderr`)."""
    fds: list[int] = []
    close: list[int] = []
    pipes: list[IO[bytes] | None] = [None, None, None]
    for number, stream in enumerate(streams):
        if stream is None:
            fds.append(number)  # inherited, as Popen does
        elif stream == subprocess.STDOUT:
            assert number == 2, "STDOUT is for stderr"
            fds.append(fds[1])
        elif stream == subprocess.DEVNULL:
            fd = os.open(os.devnull, os.O_RDWR)
            fds.append(fd)
            close.append(fd)
        elif stream == subprocess.PIPE:
            read, write = os.pipe()
            theirs, ours = (read, write) if number == 0 else (write, read)
            fds.append(theirs)
            close.append(theirs)
            pipes[number] = open(ours, "wb" if number == 0 else "rb")  # noqa: SIM115
        elif isinstance(stream, int):
            fds.append(stream)
        else:
            fds.append(stream.fileno())
    return fds, close, pipes
