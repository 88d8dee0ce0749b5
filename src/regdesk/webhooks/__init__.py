"""Signed webhooks (events.md): an application's endpoints (`endpoints`), the events written
with the change that causes them (`capture`), delivered after commit through the outbox's
`webhook` channel (`delivery`), signed with the instance's webhook key (`signing`), never to
a private address unless allowed (`targets`)."""
