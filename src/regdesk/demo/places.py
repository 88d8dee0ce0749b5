"""Names, places and phones for the demo's people, prepared once from demo/data.py."""

from __future__ import annotations

import bisect
import datetime as dt
import random
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from typing import Generic, TypeVar

from regdesk.demo import data
from regdesk.demo.logins import LOGINS

# --- names and places, prepared once -------------------------------------------------------

T = TypeVar("T")


class Weighted(Generic[T]):
    """Items drawn at random in proportion to their weights."""

    def __init__(self, pairs: Iterable[tuple[T, int]]) -> None:
        self.items: list[T] = []
        weights = []
        for item, weight in pairs:
            self.items.append(item)
            weights.append(weight)
        self.cum = list(accumulate(weights))

    def __bool__(self) -> bool:
        return bool(self.items)

    def pick(self, rng: random.Random) -> T:
        return self.items[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]


def fold(name: str) -> str:
    """The ASCII spelling of a name: accents dropped, Ł as L, the ʻokina and such left out."""
    name = "".join(data.ASCII_LETTERS.get(c, c) for c in name)
    return "".join(c for c in unicodedata.normalize("NFKD", name) if c.isascii())


def slug(name: str) -> str:
    """A name as it goes into a username or an e-mail address: ASCII letters and digits."""
    return "".join(c for c in fold(name).lower() if c.isalnum())


@dataclass(frozen=True)
class Names:
    culture: data.Culture
    given: tuple[tuple[str, ...], tuple[str, ...]]  # feminine, masculine
    family: tuple[tuple[str, ...], tuple[str, ...]]  # the same family names in those forms
    nicknames: dict[str, str]


@dataclass(frozen=True)
class Phone:
    prefix: str
    digits: int  # random digits after the prefix


@dataclass(frozen=True)
class Region:
    country: data.Country
    cultures: Weighted[Names]  # the local ones
    phones: tuple[Phone, ...]  # one per place


@dataclass(frozen=True)
class Tables:
    cultures: Weighted[Names]
    regions: Weighted[Region]
    folded: dict[str, str]  # name -> ASCII spelling (fold), for every name we use
    slugs: dict[str, str]  # name -> slug(name)


def phone_pattern(pattern: str) -> tuple[str, int]:
    """A place's phone pattern as (fixed prefix, number of random digits after it)."""
    prefix = pattern.rstrip("#")
    if "#" in prefix:
        raise ValueError(f"phone pattern {pattern!r}: random digits must come last")
    return prefix, len(pattern) - len(prefix)


@cache
def place_tables() -> Tables:
    cultures = []
    for culture in data.CULTURES:
        split = [entry.split("|") for entry in culture.family]
        family = (tuple(forms[-1] for forms in split), tuple(forms[0] for forms in split))
        cultures.append(
            Names(culture, (culture.given_f, culture.given_m), family, dict(culture.nicknames))
        )
    regions = []
    for country in data.COUNTRIES:
        local = Weighted(
            (names, names.culture.weight)
            for names in cultures
            if country.code in names.culture.homes
        )
        phones = tuple(Phone(*phone_pattern(place.phone)) for place in country.places)
        regions.append(Region(country, local, phones))
    every_name = {
        name
        for names in cultures
        for group in (*names.given, *names.family, names.culture.adopted)
        for name in group
    }
    every_name |= {
        *data.FAN_NAMES,
        *(nick for names in cultures for nick in names.nicknames.values()),
    }
    every_name |= {login.first_name for login in LOGINS.values()}
    every_name |= {login.last_name for login in LOGINS.values()}
    return Tables(
        cultures=Weighted((names, names.culture.weight) for names in cultures),
        regions=Weighted((region, region.country.weight) for region in regions),
        folded={name: fold(name) for name in every_name},
        slugs={name: slug(name) for name in every_name},
    )


@cache
def postcode_parts(pattern: str) -> tuple[str, ...]:
    """A postcode pattern in pieces: runs of '#' (digits), '@' (a letter), and the rest."""
    return tuple(re.findall(r"#+|@|[^#@]+", pattern))


def years_before(day: dt.date, years: int) -> dt.date:
    try:
        return day.replace(year=day.year - years)
    except ValueError:  # 29 February
        return day.replace(year=day.year - years, day=28)


def timestamp_of(seconds: float) -> dt.datetime:
    """A POSIX time as an aware UTC datetime, to the millisecond (as the API renders it)."""
    return dt.datetime.fromtimestamp(round(seconds, 3), dt.UTC)
