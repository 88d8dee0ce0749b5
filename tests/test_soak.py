"""A bounded soak on each database: bench/soak.py's mixed traffic against a real `regdesk
serve` for a few seconds, then each rule `make soak` checks (issue 7). The last tests show
that the rules do catch what they are about, on evidence made up to break them."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.soak import (
    Chain,
    RefreshRow,
    Soak,
    answers_consistent,
    chain_problems,
    every_kind_ran,
    every_request_answered_once,
    memory_flat,
    no_server_error,
    refresh_chains_intact,
    run_soak,
    server_effects_match,
)

from regdesk.oauth.tokens import token_key
from tests.conftest import BACKENDS, scratch_database_url

SECONDS = 5


@pytest.fixture(
    scope="module",
    params=BACKENDS,
)
def soak(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Soak]:
    folder: Path = tmp_path_factory.mktemp("soak")
    with scratch_database_url(request.param, folder) as url:
        yield run_soak(url, request.param, SECONDS)


def test_every_kind_of_request_ran(soak: Soak) -> None:
    problems = every_kind_ran(soak)
    assert not problems, problems


def test_no_request_lost_or_duplicated(soak: Soak) -> None:
    problems = every_request_answered_once(soak)
    assert not problems, problems


def test_no_5xx_or_unexpected_answer(soak: Soak) -> None:
    problems = no_server_error(soak)
    assert not problems, problems


def test_answers_consistent(soak: Soak) -> None:
    problems = answers_consistent(soak)
    assert not problems, problems


def test_server_side_effects_match_what_the_client_saw(soak: Soak) -> None:
    problems = server_effects_match(soak)
    assert not problems, problems


def test_refresh_chains_intact(soak: Soak) -> None:
    problems = refresh_chains_intact(soak)
    assert not problems, problems


def test_server_memory_flat(soak: Soak) -> None:
    problems = memory_flat(soak)
    assert not problems, problems


# --- the rules catch what they are about ---------------------------------------------------


def made_up(**evidence: object) -> Soak:
    soak = Soak("made up", seconds=60)
    for name, value in evidence.items():
        setattr(soak, name, value)
    return soak


def test_an_answer_the_server_gave_twice_breaks_the_rule() -> None:
    answered = Counter({("get user", 200): 3})
    once = made_up(sent=Counter({"get user": 3}), answered=answered)
    once.logged = Counter({("GET /api/v0/users/{id}", 200): 3})
    assert every_request_answered_once(once) == []
    twice = made_up(sent=Counter({"get user": 3}), answered=answered)
    twice.logged = Counter({("GET /api/v0/users/{id}", 200): 4})
    assert every_request_answered_once(twice)


def test_a_slow_leak_breaks_the_memory_rule_and_noise_does_not() -> None:
    seconds = [t / 2 for t in range(240)]
    # Spikes of 60 MB every few samples, and a drop: the median slope ignores them.
    noisy = [
        100.0 + (60.0 if i % 7 == 0 else 0.0) - (30.0 if i == 200 else 0.0) for i in range(240)
    ]
    assert memory_flat(made_up(rss=list(zip(seconds, noisy, strict=True)))) == []
    leaking = [100.0 + 0.25 * t for t in seconds]  # 15 MB over the second half
    assert memory_flat(made_up(rss=list(zip(seconds, leaking, strict=True))))


def test_a_forked_or_revived_chain_breaks_the_chain_rule() -> None:
    tokens = ["first", "second", "third"]
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def row(token: str, at: int, consumed: int | None) -> RefreshRow:
        spent = start + dt.timedelta(seconds=consumed) if consumed is not None else None
        return RefreshRow(token_key(token), start + dt.timedelta(seconds=at), spent, None)

    intact = [row("first", 0, 1), row("second", 1, 2), row("third", 2, None)]
    assert chain_problems(Chain(tokens, last_works=True, rows=intact)) == []
    forked = [*intact[:2], row("elsewhere", 2, None), intact[2]]
    assert chain_problems(Chain(tokens, last_works=True, rows=forked))
    two_live = [row("first", 0, 1), row("second", 1, None), row("third", 2, None)]
    assert chain_problems(Chain(tokens, last_works=True, rows=two_live))
    assert chain_problems(Chain(tokens, last_works=False, rows=intact))
    assert refresh_chains_intact(made_up(chains=[Chain(tokens, last_works=True, rows=forked)]))
