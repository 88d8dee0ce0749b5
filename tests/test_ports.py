"""The ports the tests' servers listen on (tests/helpers.py free_port): never in the range the
system takes outgoing connections' ports from, where a connection to PostgreSQL or Redis could
take the port between its choice and the server's bind (seen in CI as "address already in
use"), and free on every address when chosen."""

from __future__ import annotations

import socket

from tests.helpers import _outgoing_ports_from, free_port


def test_a_port_is_below_the_outgoing_range_and_free_on_every_address() -> None:
    chosen = [free_port() for _ in range(20)]
    assert len(set(chosen)) == 20
    assert all(port < _outgoing_ports_from() for port in chosen)
    for port in chosen:
        with socket.socket() as server:
            server.bind(("0.0.0.0", port))  # noqa: S104
            server.listen()


def test_a_port_someone_listens_on_is_passed_over() -> None:
    first = free_port()
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", first))  # noqa: S104
        taken.listen()
        later = [free_port() for _ in range(3000)]  # around the whole slice and back
    assert first not in later
