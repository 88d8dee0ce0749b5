"""The outbox: messages to other systems (e-mail now, webhooks next), written in the same
transaction as the change that causes them and delivered after it commits.

One delivery machinery for every channel (`service.deliver`): a due message is claimed for a
lease (a short transaction: on PostgreSQL `FOR UPDATE SKIP LOCKED`, so that several server
processes never claim the same attempt), sent outside any transaction, then marked sent, or
given a next attempt after an exponential backoff with jitter, until its channel gives up
(marked failed, kept for the admin area). A process that dies mid-send leaves its claim to
expire: the message is tried again (at least once, never lost).
"""
