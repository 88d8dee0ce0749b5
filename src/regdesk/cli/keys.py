"""`regdesk keys`: the instance's signing keys (events.md and oidc.md: `regdesk keys rotate`)."""

from __future__ import annotations

from typing import Any

from regdesk.audit.service import Actor, record_event
from regdesk.cli import Context, emit, json_option, main, pass_context
from regdesk.oidc import keys as id_token_keys
from regdesk.webhooks.signing import rotate as rotate_webhook_key


@main.group()
def keys() -> None:
    """The instance's signing keys."""


@keys.command("rotate")
@json_option
@pass_context
def keys_rotate(context: Context, as_json: bool) -> None:
    """New keys for webhook signatures and ID tokens; the old ones stay published for
    REGDESK_KEY_OVERLAP, so what they signed just before still verifies. (Ticket codes keep
    their key: tickets printed for the event must keep scanning.)"""
    rotated: list[dict[str, Any]] = []
    with context.writing() as session:
        old, new = rotate_webhook_key(session)
        rotated.append({"purpose": "webhook", "kid": new, "retired": old})
        for algorithm, (old, new) in id_token_keys.rotate(session).items():
            rotated.append({"purpose": f"id-token {algorithm}", "kid": new, "retired": old})
        for key in rotated:
            record_event(
                session,
                Actor.command_line(),
                "keys.rotated",
                target_type="signing_key",
                target_id=key["kid"],
                details={"purpose": key["purpose"], "retired": key["retired"]},
            )
    overlap = context.settings.key_overlap
    webhook = rotated[0]
    emit(
        as_json,
        {**webhook, "overlapSeconds": int(overlap.total_seconds()), "keys": rotated},
        "\n".join(
            f"{key['purpose']} key {key['kid']} in use; "
            f"{key['retired'] or 'no key'} retired, published for {overlap}"
            for key in rotated
        ),
    )
