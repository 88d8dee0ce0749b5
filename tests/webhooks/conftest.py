"""Webhook tests: every write writes its events (as the app and the CLI set up at start), and a
sender delivers them when a test says so."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from tests.webhooks.support import ISSUER, receiver

from regdesk import documents
from regdesk.models import DOCUMENTS
from regdesk.webhooks import capture
from regdesk.webhooks.delivery import Sender

__all__ = ["receiver"]


@pytest.fixture(autouse=True)
def _events_are_written() -> None:
    documents.install(DOCUMENTS)
    capture.install()


@pytest.fixture
def sender(engine: Engine) -> Iterator[Sender]:
    """A server process's webhook channel, private targets allowed (the receiver is local)."""
    made = Sender(engine, issuer=ISSUER, allow_private=True)
    yield made
    made.close()
