"""Sending webhook events (events.md, Delivery): the outbox's `webhook` channel.

Each attempt: the endpoint looked up (removed or disabled: the event is given up, kept for a
redelivery), its URL checked again after DNS and the request sent to the checked address
(webhooks.targets), `POST` of the body's exact bytes with the signed JWT and the
`webhook-id`/`webhook-timestamp` headers, 10 s at most, no redirect followed, the answer read
up to 64 KiB. Every attempt is logged (webhook_deliveries); a 2xx is success, anything else is
tried again on events.md's schedule (`retry_after`) for 3 days, then given up, and the endpoint
disabled unless a delivery to it succeeded meanwhile.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import ssl
import time
import uuid
from typing import Any

import httpx
from sqlalchemy import Engine, insert, select
from sqlalchemy.orm import Session

from regdesk import __version__
from regdesk.db import utcnow, write_session
from regdesk.keys import PrivateKey
from regdesk.outbox.service import Channel, Claimed, GiveUp
from regdesk.webhooks.capture import CHANNEL
from regdesk.webhooks.endpoints import disable_failing
from regdesk.webhooks.models import WebhookDelivery, WebhookEndpoint
from regdesk.webhooks.signing import Signer, token
from regdesk.webhooks.targets import TargetRefused, resolve

TIMEOUT = 10.0  # seconds for the whole attempt
ANSWER_LIMIT = 64 * 1024  # bytes of an answer read
ANSWER_KEPT = 1024  # bytes of it in the delivery log
GIVE_UP_AFTER = dt.timedelta(days=3)
# events.md: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then every 10 h.
SCHEDULE = (
    dt.timedelta(seconds=5),
    dt.timedelta(minutes=5),
    dt.timedelta(minutes=30),
    dt.timedelta(hours=2),
    dt.timedelta(hours=5),
    dt.timedelta(hours=10),
)
JITTER = 0.1  # each wait drawn within 10 % of its value either way


def retry_after(attempts: int, rng: random.Random | None = None) -> dt.timedelta:
    """The wait after the `attempts`-th failed attempt, with jitter (failures at one moment,
    an endpoint down, do not all come back at one moment)."""
    wait = SCHEDULE[min(attempts, len(SCHEDULE)) - 1]
    return wait * (1 - JITTER + 2 * JITTER * (rng or random).random())


class Failed(Exception):
    """An attempt that got no 2xx: what the delivery log and the outbox show."""


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The certificate authorities httpx trusts, read once per process: reading them takes
    longer than anything else an app's start does, and every Sender verifies with the same."""
    return httpx.create_ssl_context(trust_env=False)


class Sender:
    """The webhook channel of one server process (its HTTP client, its key)."""

    def __init__(self, engine: Engine, *, issuer: str, allow_private: bool) -> None:
        self.engine = engine
        self.issuer = issuer
        self.allow_private = allow_private
        self.signer = Signer(engine)
        self.user_agent = f"regdesk/{__version__}"
        self.client = httpx.Client(
            timeout=TIMEOUT, follow_redirects=False, trust_env=False, verify=_tls_context()
        )

    def channel(self) -> Channel:
        return Channel(
            CHANNEL,
            None,
            GIVE_UP_AFTER,
            schedule=retry_after,
            gave_up=self.gave_up,
            send_claimed=self.send,
        )

    def close(self) -> None:
        self.client.close()

    def send(self, message: Claimed) -> None:
        payload = message.payload
        # The endpoint as it is now, and the key in use, on one connection.
        with self.engine.connect() as connection:
            endpoint = connection.execute(
                select(WebhookEndpoint.url, WebhookEndpoint.enabled).where(
                    WebhookEndpoint.id == payload["endpoint"]
                )
            ).first()
            if endpoint is None:
                raise GiveUp("the endpoint was removed")
            if not endpoint.enabled:
                raise GiveUp("the endpoint is disabled")
            key = self.signer.key(connection)
        jti = uuid.uuid4().hex
        started = time.monotonic()
        status: int | None = None
        answer = b""
        error: str | None = None
        try:
            status, answer = self._post(endpoint.url, key, payload, jti)
        except (TargetRefused, httpx.HTTPError, OSError) as failed:
            error = _described(failed)
        elapsed = time.monotonic() - started
        self._log(message, payload["endpoint"], jti, status, error, elapsed, answer)
        if error is not None:
            raise Failed(error)
        if status is None or not 200 <= status < 300:
            raise Failed(f"HTTP {status}")

    def _post(
        self, url: str, key: PrivateKey, payload: dict[str, Any], jti: str
    ) -> tuple[int, bytes]:
        target = resolve(url, allow_private=self.allow_private)
        body = payload["body"].encode()
        now = int(time.time())
        signature = token(
            key,
            issuer=self.issuer,
            audience=url,
            data=_data_member(body),
            jti=jti,
            now=now,
        )
        headers = {
            "Host": target.host if target.port in (80, 443) else f"{target.host}:{target.port}",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {signature}",
            "webhook-id": payload["webhookId"],
            "webhook-timestamp": str(now),
            "User-Agent": self.user_agent,
        }
        deadline = time.monotonic() + TIMEOUT
        request = self.client.build_request(
            "POST",
            target.pinned_url(),
            content=body,
            headers=headers,
            extensions={"sni_hostname": target.host},
        )
        response = self.client.send(request, stream=True)
        try:
            answer = bytearray()
            for chunk in response.iter_raw():
                answer += chunk
                if len(answer) >= ANSWER_LIMIT:
                    break
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("the answer took over 10 s")
            return response.status_code, bytes(answer[:ANSWER_LIMIT])
        finally:
            response.close()

    def _log(
        self,
        message: Claimed,
        endpoint_id: int,
        jti: str,
        status: int | None,
        error: str | None,
        elapsed: float,
        answer: bytes,
    ) -> None:
        with write_session(self.engine) as session:
            session.execute(
                insert(WebhookDelivery).values(
                    endpoint_id=endpoint_id,
                    message_id=message.id,
                    webhook_id=message.payload["webhookId"],
                    event=message.payload["event"],
                    attempt=message.attempts,
                    jti=jti,
                    status_code=status,
                    error=error,
                    duration_ms=round(elapsed * 1000),
                    answer=answer[:ANSWER_KEPT].decode("utf-8", "replace"),
                    attempted_at=utcnow(),
                )
            )

    def gave_up(self, session: Session, message: Claimed, error: str) -> None:
        """An event failed for 3 days: its endpoint is disabled, unless a delivery to it
        succeeded meanwhile (one event it refuses is not a dead endpoint)."""
        endpoint_id = message.payload["endpoint"]
        if session.scalar(select(WebhookEndpoint.enabled).where(WebhookEndpoint.id == endpoint_id)):
            disable_failing(session, endpoint_id, utcnow() - GIVE_UP_AFTER, error)


def _data_member(body: bytes) -> bytes:
    """The `data` member's bytes exactly as the body holds them (capture.body made it:
    `{"event":"<name>","data":` then the data, then `}`)."""
    start = body.index(b',"data":') + len(b',"data":')
    return body[start:-1]


def _described(error: BaseException) -> str:
    """What went wrong, for the log: the kind of failure and its message, no secret in it."""
    if isinstance(error, TargetRefused):
        return f"refused: {error}"
    if isinstance(error, httpx.TimeoutException):
        return "timeout: no answer within 10 s"
    return f"{type(error).__name__}: {error}"[:500]
