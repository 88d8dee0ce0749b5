"""The demo's people: names in their own spelling, usernames, e-mail addresses, addresses and
phones that fit their country, sign-up times over the convention's history."""

from __future__ import annotations

import datetime as dt
from array import array
from typing import Any

from regdesk.demo import data
from regdesk.demo.generator import Generator
from regdesk.demo.logins import LOGINS, login_email
from regdesk.demo.places import Names, Region, Weighted, postcode_parts, timestamp_of

NO_ADDRESS_SHARE = 0.15
NO_PHONE_SHARE = 0.03
PREFERRED_NAME_SHARE = 0.15
ADDRESS_FIELDS = (
    "address_line1",
    "address_line2",
    "address_city",
    "address_state",
    "address_zipcode",
    "address_country",
)
EMAIL_DOMAINS = Weighted(zip(data.EMAIL_DOMAINS, data.EMAIL_DOMAIN_WEIGHTS, strict=True))


class People(Generator):
    """The users' rows."""

    def _user_creation_times(self) -> list[float]:
        """Sign-up times, ascending (user ids follow creation order): a steady trickle, and
        a rush whenever registration for an event opens."""
        rng, start, end = self.rng, self.history_start, self.now - 3600
        openings = [event.opened - 30 * 86400 for event in (self.past_event, self.current_event)]
        times = []
        for _ in range(self.user_count):
            if self.random() < 0.35:
                at = self._choice(openings) + rng.expovariate(1 / (12 * 86400))
                times.append(min(at, end - self.random() * 86400))
            else:
                times.append(start + self.random() * (end - start))
        times.sort()
        return times

    def _users(self) -> None:
        self.created = array("d", self._user_creation_times())
        for user_id, created in enumerate(self.created, start=1):
            self.add("users", self._user(user_id, created))

    def _user(self, user_id: int, created: float) -> dict[str, Any]:
        rng, tables = self.rng, self.tables
        region = tables.regions.pick(rng)
        country = region.country
        place_index = self._below(len(country.places))
        born = dt.date.fromordinal(self._between(*self.birthdays.pick(rng)))
        login = LOGINS.get(user_id)
        if login is None:
            first, last, preferred, first_slug, last_slug = self._name(region)
            username = self._username(first_slug, last_slug, preferred, born)
            email = self._email(first_slug, last_slug, username, born)
        else:
            first, last, preferred = login.first_name, login.last_name, login.preferred_name
            username, email = login.username, login_email(login)
        phone = None
        if self.random() >= NO_PHONE_SHARE:
            pattern = region.phones[place_index]
            phone = f"{pattern.prefix}{self._below(10**pattern.digits):0{pattern.digits}d}"
        created_at = timestamp_of(created)
        row = {
            "id": user_id,
            "username": username,
            "email": email,
            "verified": login is not None or self.random() < 0.92,
            "identity_verified": login is not None or self.random() < 0.35,
            "first_name": first,
            "last_name": last,
            "preferred_name": preferred,
            "phone": phone,
            "born_at": born,
            "newsletter": self.random() < 0.4,
            "profile_picture_url": (
                f"https://avatars.example.net/{username.lower()}.png"
                if self.random() < 0.05
                else None
            ),
            "created_at": created_at,
            "updated_at": self._updated(created, created_at),
        }
        row.update(self._address(country, place_index))
        return row

    def _name(self, region: Region) -> tuple[str, str, str | None, str, str]:
        """(first, last, preferred or None, slug of first, slug of last)."""
        rng, tables = self.rng, self.tables
        local = bool(region.cultures) and self.random() < region.country.local_share
        names = (region.cultures if local else tables.cultures).pick(rng)
        form = self._below(2)  # feminine or masculine forms
        first = self._choice(names.given[form])
        family = [self._choice(names.family[form])]
        if self.random() < names.culture.double_family:
            second = self._choice(names.family[form])
            if second != family[0]:
                family.append(second)
        preferred = None
        if self.random() < PREFERRED_NAME_SHARE:
            preferred = self._preferred_name(names, first)
        first_slug, last_slug = tables.slugs[first] or "fan", tables.slugs[family[0]] or "con"
        if not local and self.random() < 0.3:  # abroad, many write their name without accents
            first, family = tables.folded[first], [tables.folded[part] for part in family]
        last = " ".join(family)
        return first, last, preferred, first_slug, last_slug

    def _preferred_name(self, names: Names, first: str) -> str:
        nickname = names.nicknames.get(first)
        if nickname and self.random() < 0.7:
            return nickname
        if names.culture.adopted and self.random() < 0.6:
            return self._choice(names.culture.adopted)
        return self._choice(data.FAN_NAMES)

    def _username(self, first: str, last: str, preferred: str | None, born: dt.date) -> str:
        camel = self.random() < 0.15
        roll = self.random()
        if roll < 0.14:
            base = f"{first.capitalize()}{last.capitalize()}" if camel else first + last
        elif roll < 0.24:
            base = f"{first}.{last}"
        elif roll < 0.31:
            base = f"{first}_{last}"
        elif roll < 0.41:
            base = first[0] + last
        elif roll < 0.46:
            base = first + last[0]
        elif roll < 0.56:
            base = f"{first}{born.year % 100:02d}"
        elif roll < 0.8:
            word, creature = self._choice(data.HANDLE_WORDS), self._choice(data.HANDLE_CREATURES)
            if camel:
                base = word.capitalize() + creature.capitalize()
            else:
                base = f"{word}{self._choice(('', '_', '-'))}{creature}"
        elif roll < 0.88:
            base = f"{self._choice(data.HANDLE_CREATURES)}{self._between(1, 999)}"
        elif preferred is not None and self.tables.slugs[preferred]:
            base = f"{self._choice(('', '', 'the', 'its', 'x_'))}{self.tables.slugs[preferred]}"
        else:
            base = f"{first}{last}{self._between(1, 99)}"
        return self._unique(base, self.taken_usernames, 64)

    def _email(self, first: str, last: str, username: str, born: dt.date) -> str:
        rng = self.rng
        roll = self.random()
        if roll < 0.3:
            local = f"{first}.{last}"
        elif roll < 0.45:
            local = first + last
        elif roll < 0.55:
            local = first[0] + last
        elif roll < 0.6:
            local = f"{first}_{last}"
        elif roll < 0.7:
            local = f"{first}{last}{born.year % 100:02d}"
        elif roll < 0.9:
            local = username.lower().strip("._-") or first
        elif roll < 0.95:
            local = f"{last}.{first}"
        else:
            local = f"{first}{self._between(1, 999)}"
        domain = EMAIL_DOMAINS.pick(rng)
        return self._unique(local, self.taken_emails, 60, suffix=f"@{domain}")

    def _unique(self, base: str, taken: set[str], max_length: int, suffix: str = "") -> str:
        """base + suffix, with digits added to base until no one has it (ignoring case)."""
        candidate = base[:max_length] + suffix
        while candidate.lower() in taken:
            candidate = f"{base[: max_length - 4]}{self._between(2, 9999)}{suffix}"
        taken.add(candidate.lower())
        return candidate

    def _address(self, country: data.Country, place_index: int) -> dict[str, str | None]:
        if self.random() < NO_ADDRESS_SHARE:  # api.md 2.2: then every child attribute is null
            return dict.fromkeys(ADDRESS_FIELDS)
        place = country.places[place_index]
        street = self._choice(place.streets or country.streets)
        number = self._between(1, country.max_house)
        if "{a}" in country.line1:  # Japanese block numbers: chome-ban-go
            line1 = country.line1.format(
                street=street, a=number, b=self._between(1, 20), c=self._between(1, 30)
            )
        else:
            line1 = country.line1.format(street=street, n=number)
        line2 = None
        if self.random() < 0.2:
            line2 = self._choice(country.units).format(
                n=self._between(1, 9), L=self._choice(data.POSTCODE_LETTERS[:6])
            )
        return {
            "address_line1": line1,
            "address_line2": line2,
            "address_city": place.city,
            "address_state": place.state,
            "address_zipcode": self._postcode(place.postcode),
            "address_country": country.code,
        }

    def _postcode(self, pattern: str) -> str:
        parts = []
        for part in postcode_parts(pattern):
            if part[0] == "#":
                parts.append(f"{self._below(10 ** len(part)):0{len(part)}d}")
            elif part == "@":
                parts.append(self._choice(data.POSTCODE_LETTERS))
            else:
                parts.append(part)
        return "".join(parts)
