"""A person's own account: signing in and out, the account page, the current-user record of
the API (api.md 2.4), and resetting a password."""
