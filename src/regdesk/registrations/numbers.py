"""Order numbers and ticket codes made many at a time (an import, the demo), by the rules
`ordering` follows one order at a time.

Order numbers: random decimal digits, five while they are plenty, one digit longer whenever
the shorter ones are a tenth used (registrations.md: a number a person reads out, compared by
clients as int(orderId), so never a leading zero). Ticket codes: 20 characters of letters and
digits a scanner's keyboard layout cannot garble, 100 bits of chance.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable

FIRST_DIGITS = 5
TICKET_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no I, O, 0, 1: nothing to confuse
TICKET_LENGTH = 20
# base32's alphabet, letter for letter onto the ticket's: 32 symbols, 5 random bits each.
_BASE32_TO_TICKET = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", TICKET_ALPHABET)


def order_number_digits(taken: int) -> int:
    """How many digits a new order number has when `taken` orders exist."""
    digits = FIRST_DIGITS
    while taken * 10 >= 9 * 10 ** (digits - 1):
        digits += 1
    return digits


def new_order_numbers(
    count: int, taken: set[str], below: Callable[[int], int] = secrets.randbelow
) -> list[str]:
    """`count` random order numbers that are not in `taken`, each added to it as it is made.
    `below(n)` draws an integer in [0, n): the demo passes its seeded generator's."""
    made = []
    for _ in range(count):
        low = 10 ** (order_number_digits(len(taken)) - 1)
        number = str(below(9 * low) + low)
        while number in taken:  # at most a tenth taken: a handful of tries at worst
            number = str(below(9 * low) + low)
        taken.add(number)
        made.append(number)
    return made


def new_ticket_codes(count: int) -> list[str]:
    """`count` ticket codes, as `ordering.new_ticket_code` makes one, from one draw of the
    system's random bytes (100 bits each: a repeat is as likely as guessing one)."""
    pairs = (count + 1) // 2  # 25 random bytes are 40 base32 characters: two codes
    text = base64.b32encode(secrets.token_bytes(25 * pairs)).decode().translate(_BASE32_TO_TICKET)
    return [text[i * TICKET_LENGTH : (i + 1) * TICKET_LENGTH] for i in range(count)]
