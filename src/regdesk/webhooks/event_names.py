"""The events an endpoint may want (events.md, Events and their `data`), by their names."""

VOLUNTEER_SUBMITTED = "volunteer-submitted"
VOLUNTEER_UPDATED = "volunteer-updated"
VOLUNTEER_ASSIGNED = "volunteer-assigned"
VOLUNTEER_UNASSIGNED = "volunteer-unassigned"
VOLUNTEER_DELETED = "volunteer-deleted"
REGISTRATION_UPDATED = "registration-updated"
USER_UPDATED = "user-updated"
PING = "ping"

EVENT_NAMES = (
    VOLUNTEER_SUBMITTED,
    VOLUNTEER_UPDATED,
    VOLUNTEER_ASSIGNED,
    VOLUNTEER_UNASSIGNED,
    VOLUNTEER_DELETED,
    REGISTRATION_UPDATED,
    USER_UPDATED,
    PING,
)
