"""The guide's setup is PostgreSQL and Redis: without REGDESK_TEST_POSTGRES_URL there is
nothing of it to run, and its test is not collected (rather than skipped)."""

from __future__ import annotations

from tests.conftest import postgres_base_url

collect_ignore = [] if postgres_base_url() else ["test_nginx.py"]
