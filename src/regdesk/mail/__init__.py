"""E-mail (accounts.md): messages written to the outbox (regdesk.outbox) with the change that
causes them, and sent after it commits over SMTP (`REGDESK_SMTP_URL`). Without an SMTP server
configured they stay in the outbox, listed by `regdesk mail list` and the admin area."""
