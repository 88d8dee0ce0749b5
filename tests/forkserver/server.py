"""The fork server itself (tests/forkserver): it imports the service's libraries once, then
forks a child for each request and reports each child's end to whom asked for it. Run as
`python -m tests.forkserver.server CONTROL_FD ADDRESS` by the test worker's client."""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from tests.forkserver import MESSAGE_BYTES

# Imported ahead: the command line, the server and the app; and the app's routes built
# (app._routes), which every app a child serves shares, as each `regdesk serve` would build
# them at its start.
PRELOAD = (
    "regdesk.cli",
    "regdesk.cli.serve",
    "regdesk.web.access_log",
    "regdesk.app",
    "uvicorn.main",
    "uvicorn.server",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.lifespan.on",
)
# Never imported ahead: a server on a current database never loads Alembic
# (migrations/revisions.py), nor should the fork server for it.
NOT_AHEAD = ("alembic",)


def _serve(control: socket.socket, listener: socket.socket) -> tuple[list[str], str]:
    """Import ahead, then start a child for each request and report each child's end to whom
    asked for it: the test worker (`control`) or a stand-in that connected (`listener`).
    Returns only in a child: its argument vector and working directory."""
    for name in PRELOAD:
        importlib.import_module(name)
    sys.modules["regdesk.app"]._routes()
    ahead = [name for name in NOT_AHEAD if name in sys.modules]
    assert not ahead, f"imported ahead, which they must never be: {ahead}"
    # Set aside from the collector, as a served app's start is (app.py, settle_heap): a child's
    # full collections, its served app's first among them, walk only what the child made.
    gc.collect()
    gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()

    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    for readable in (control, listener, wake_read):
        selector.register(readable, selectors.EVENT_READ)
    askers: dict[int, socket.socket] = {}  # child's pid: who asked for it
    while True:
        for key, _ in selector.select():
            if key.fileobj == wake_read:
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_read, 512):
                        pass
            elif key.fileobj == listener:
                connection, _ = listener.accept()
                selector.register(connection, selectors.EVENT_READ)
            else:
                asker = key.fileobj
                assert isinstance(asker, socket.socket)
                message, fds, _, _ = socket.recv_fds(asker, MESSAGE_BYTES, 3)
                if not message:
                    if asker == control:  # the tests' worker is gone
                        os._exit(0)
                    selector.unregister(asker)
                    asker.close()
                    continue
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    for each in list(selector.get_map().values()):
                        if isinstance(each.fileobj, socket.socket):
                            each.fileobj.close()
                    selector.close()
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    for fd in (wake_read, wake_write):
                        os.close(fd)
                    _become(request, fds)
                    return request["argv"], request["cwd"]
                for fd in fds:
                    os.close(fd)
                askers[pid] = asker
                _tell(asker, {"started": pid})
        _report_exits(askers)


def _tell(asker: socket.socket, what: dict[str, int]) -> None:
    with contextlib.suppress(OSError):  # a stand-in that has gone
        asker.send(json.dumps(what).encode())


def _report_exits(askers: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        asker = askers.pop(pid, None)
        if asker is not None:
            _tell(asker, {"exited": pid, "status": status})


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """In the child: the streams, environment and directory the test asked for. (`random`
    draws anew in each child by itself: CPython seeds it again after a fork.)"""
    for number, fd in enumerate(fds):
        os.dup2(fd, number)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])


def _main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(sys.argv[2])
    listener.listen()
    argv, _ = _serve(control, listener)
    # As `python script args...`: the script's directory first on the path, the script as
    # __main__ (a spawned worker process imports it again, as it would the console script).
    script = argv[0]
    sys.argv = list(argv)
    sys.path[0] = str(Path(script).resolve().parent)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    _main()
