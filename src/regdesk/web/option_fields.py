"""How a form asks an event's options (select, multi, text, number), the same on the volunteer
form and on /register: the control each option gets, and the values to show in it. The
markup is templates/_option_fields.html."""

from __future__ import annotations

from typing import Any

from regdesk.events.models import OptionType

RADIO_CHOICES_MAX = 5  # a select with more choices is a drop-down list


def option_view(option: Any, field: str, sent: list[str]) -> dict[str, Any]:
    """One option (an EventOption or a RegistrationOption) as the template asks it: its
    control, its form field, and what was sent or stored (`sent`, as text)."""
    if option.type == OptionType.SELECT and option.choices is not None:
        control = "radios" if len(option.choices) <= RADIO_CHOICES_MAX else "dropdown"
    elif option.type == OptionType.MULTI and option.choices is not None:
        control = "checkboxes"
    elif option.type == OptionType.MULTI:
        control = "lines"
    elif option.type == OptionType.NUMBER:
        control = "number"
    else:
        control = "text"
    return {
        "option": option,
        "field": field,
        "control": control,
        "sent": sent,
        "text": "\n".join(sent) if control == "lines" else (sent[0] if sent else ""),
        "shown": ", ".join(sent),  # the answer, read-only once editing has closed
    }
