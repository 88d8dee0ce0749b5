"""The questions the demo event asks its volunteers, and how the demo's people answer."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from regdesk.demo import data
from regdesk.events.models import OptionType

# --- the event's questions to its volunteers -----------------------------------------------


@dataclass(frozen=True)
class OptionSpec:
    name: str
    type: OptionType
    choices: list[str] | None  # None: any value
    answered: float  # share of volunteers who answer it
    answer: Callable[[random.Random, bool], Any]  # (rng, volunteered before) -> value


def _shirt_size(rng: random.Random, _before: bool) -> str:
    return rng.choices(data.SHIRT_SIZES, data.SHIRT_SIZE_WEIGHTS)[0]


def _shifts(rng: random.Random, _before: bool) -> list[str]:
    picked = sorted(rng.sample(range(len(data.SHIFTS)), rng.randint(1, 5)))
    return [data.SHIFTS[i] for i in picked]


def _dietary_needs(rng: random.Random, _before: bool) -> list[str]:
    if rng.random() < 0.6:
        return []
    return rng.sample(data.DIETARY_NEEDS, rng.choice((1, 1, 1, 2)))


def _languages(rng: random.Random, _before: bool) -> list[str]:
    others = rng.sample(data.LANGUAGES[1:], rng.choice((0, 0, 1, 1, 2)))
    return others if others and rng.random() < 0.1 else ["English", *others]


def _hours(rng: random.Random, _before: bool) -> int | float:
    return rng.choice((4, 6, 7.5, 8, 10, 12, 12, 12.5, 16, 20, 24))


def _conventions_volunteered(rng: random.Random, before: bool) -> int:
    return int(before) + min(int(rng.expovariate(0.45)), 30)


def _pronouns(rng: random.Random, _before: bool) -> str:
    return rng.choices(data.PRONOUNS, data.PRONOUN_WEIGHTS)[0]


def _note(rng: random.Random, _before: bool) -> str:
    return rng.choice(data.NOTES)


CURRENT_OPTIONS = (
    OptionSpec("Shirt size", OptionType.SELECT, data.SHIRT_SIZES, 0.93, _shirt_size),
    OptionSpec("Preferred shifts", OptionType.MULTI, data.SHIFTS, 0.88, _shifts),
    OptionSpec("Dietary needs", OptionType.MULTI, data.DIETARY_NEEDS, 0.8, _dietary_needs),
    OptionSpec("Languages spoken", OptionType.MULTI, None, 0.7, _languages),
    OptionSpec("Hours available", OptionType.NUMBER, None, 0.85, _hours),
    OptionSpec(
        "Conventions volunteered at", OptionType.NUMBER, None, 0.75, _conventions_volunteered
    ),
    OptionSpec("Pronouns", OptionType.TEXT, None, 0.6, _pronouns),
    OptionSpec("Anything we should know?", OptionType.TEXT, None, 0.3, _note),
)
PAST_OPTIONS = (
    OptionSpec("Shirt size", OptionType.SELECT, data.SHIRT_SIZES, 0.95, _shirt_size),
    OptionSpec("Hours available", OptionType.NUMBER, None, 0.8, _hours),
)
