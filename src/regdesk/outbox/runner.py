"""A server process's delivery: a thread that sends what is due on its channels, woken by a
commit of this process that wrote to the outbox, and otherwise every `poll` seconds (retries,
and messages written by other processes): REGDESK_OUTBOX_POLL_SECONDS, POLL unless set."""

from __future__ import annotations

import logging
import threading

from sqlalchemy import Engine

from regdesk.outbox.service import Channel, deliver, stop_waiting, waiting_for_new

POLL = 5.0  # seconds: REGDESK_OUTBOX_POLL_SECONDS's default (config.py)
log = logging.getLogger("regdesk.outbox")


class Runner:
    def __init__(self, engine: Engine, channels: list[Channel], poll: float = POLL) -> None:
        self.engine, self.channels, self.poll = engine, channels, poll
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="regdesk-outbox", daemon=True)

    def start(self) -> None:
        waiting_for_new(self._wake)
        self._thread.start()

    def stop(self) -> None:
        """Ends after the message being sent, if any (a claimed batch's others wait for their
        claims to expire, then go out from whichever process is up)."""
        self._stopping.set()
        self._wake.set()
        stop_waiting(self._wake)
        self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            for channel in self.channels:
                try:
                    deliver(self.engine, channel, stopping=self._stopping)
                except Exception:  # the database away, say: tried again at the next turn
                    log.exception("outbox delivery on %s failed; trying again", channel.name)
            self._wake.wait(self.poll)
