"""`regdesk keys`: the instance's signing keys (events.md: `regdesk keys rotate`)."""

from __future__ import annotations

from regdesk.audit.service import Actor, record_event
from regdesk.cli import Context, emit, json_option, main, pass_context
from regdesk.webhooks.signing import rotate


@main.group()
def keys() -> None:
    """The instance's signing keys."""


@keys.command("rotate")
@json_option
@pass_context
def keys_rotate(context: Context, as_json: bool) -> None:
    """A new webhook key; the old one stays published for REGDESK_KEY_OVERLAP."""
    with context.writing() as session:
        old, new = rotate(session)
        record_event(
            session,
            Actor.command_line(),
            "keys.rotated",
            target_type="signing_key",
            target_id=new,
            details={"purpose": "webhook", "retired": old},
        )
    overlap = context.settings.key_overlap
    emit(
        as_json,
        {
            "purpose": "webhook",
            "kid": new,
            "retired": old,
            "overlapSeconds": int(overlap.total_seconds()),
        },
        f"webhook key {new} in use; {old or 'no key'} retired, published for {overlap}",
    )
