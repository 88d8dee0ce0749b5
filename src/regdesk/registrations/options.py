"""The questions the current event asks on registration (registrations.md: select, multi,
text, number, like the volunteer options), with the rules of every form's options
(regdesk.events.options): an answered option keeps its type; deleting one deletes its answers.
"""

from __future__ import annotations

from regdesk.events.options import OptionKind
from regdesk.registrations.models import RegistrationOption, RegistrationOptionValue

REGISTRATION_OPTIONS = OptionKind(
    RegistrationOption,
    RegistrationOptionValue,
    target_type="registration_option",
    answered_by="Attendees",
)
