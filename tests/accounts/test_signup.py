"""Sign-up's rules (accounts/signup.py), on each database: the same rules as every other way
of making a user, the one password rule, a date of birth, the organizer's terms when they have
some; a taken username or address said to be taken, never whose; the mailed link verifies the
address once, and a changed address becomes the user's only then."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from sqlalchemy import Engine, select

from regdesk.accounts.links import LinkPurpose, issue_link
from regdesk.accounts.signup import SignUp, sign_up, verify_email
from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import read_session, write_session
from regdesk.errors import Invalid
from regdesk.security import verify_password
from regdesk.users.models import User
from tests.web.support import make_user

pytestmark = pytest.mark.postgres
ACTOR = Actor("anonymous", ip_address="192.0.2.7")
TODAY = dt.date(2026, 11, 24)
FORM = SignUp(
    username="Fae",
    first_name=" Fae ",
    last_name="Fox",
    preferred_name="",
    email="Fae@Example.org",
    born="1994-05-17",
    password="a quiet fox at dusk",
    terms_agreed=True,
)


def signed_up(engine: Engine, form: SignUp = FORM, *, terms: bool = False) -> tuple[int, str]:
    with write_session(engine) as session:
        user, token = sign_up(session, ACTOR, form, terms_required=terms, today=TODAY)
        return user.id, token


def refused(engine: Engine, form: SignUp, *, terms: bool = False) -> dict[str, str]:
    with pytest.raises(Invalid) as caught, write_session(engine) as session:
        sign_up(session, ACTOR, form, terms_required=terms, today=TODAY)
    with read_session(engine) as session:
        assert session.scalars(select(User.id).where(User.username == form.username)).all() == []
    return caught.value.errors


def user(engine: Engine, user_id: int) -> User:
    with read_session(engine) as session:
        found = session.get(User, user_id)
        assert found is not None
        session.expunge(found)
        return found


def test_a_new_account_is_made_unverified_with_its_password_hashed(engine: Engine) -> None:
    user_id, token = signed_up(engine)
    made = user(engine, user_id)
    # The address as the import's rule keeps it: the domain folded, the mailbox as typed.
    assert (made.username, made.first_name, made.email) == ("Fae", "Fae", "Fae@example.org")
    assert (made.preferred_name, made.born_at, made.verified) == (None, dt.date(1994, 5, 17), False)
    assert made.password_hash is not None
    assert verify_password(made.password_hash, FORM.password)
    assert token not in made.password_hash
    with read_session(engine) as session:
        actions = session.scalars(select(AuditEvent.action)).all()
    assert "user.signed_up" in actions


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"username": "no spaces allowed"}, "username"),
        ({"email": "not-an-address"}, "email"),
        ({"first_name": "  "}, "firstName"),
        ({"last_name": ""}, "lastName"),
        ({"born": "17/05/1994"}, "bornAt"),
        ({"born": "2027-01-01"}, "bornAt"),  # after today
        ({"born": "1899-12-31"}, "bornAt"),
        ({"password": "short"}, "password"),
        ({"password": "Password1234"}, "password"),  # among the common ones, whatever its case
        ({"password": "fae@example.org"}, "password"),  # the account's own address
        ({"preferred_name": "x" * 101}, "preferredName"),
    ],
)
def test_each_field_is_checked(engine: Engine, change: dict[str, str], field: str) -> None:
    errors = refused(engine, dataclasses.replace(FORM, **change))
    assert field in errors, errors


def test_every_bad_field_is_named_at_once(engine: Engine) -> None:
    errors = refused(engine, dataclasses.replace(FORM, email="nope", born="", password="x"))
    assert {"email", "bornAt", "password"} <= set(errors)


def test_a_taken_username_or_address_is_said_to_be_taken_never_whose(engine: Engine) -> None:
    make_user(engine, "fae", email="someone@example.org")
    make_user(engine, "otter", email="fae@example.org")
    errors = refused(engine, FORM)  # both taken, in another case
    assert set(errors) >= {"username", "email"}
    assert "otter" not in " ".join(errors.values())
    # Taken while another field is wrong too: still said.
    errors = refused(engine, dataclasses.replace(FORM, password="x"))
    assert set(errors) >= {"username", "email", "password"}


def test_the_terms_are_asked_only_when_the_organizer_has_some(engine: Engine) -> None:
    unagreed = dataclasses.replace(FORM, terms_agreed=False)
    assert "terms" in refused(engine, unagreed, terms=True)
    signed_up(engine, unagreed, terms=False)


def test_the_mailed_link_verifies_the_address_once(engine: Engine) -> None:
    user_id, token = signed_up(engine)
    with write_session(engine) as session:
        verified = verify_email(session, ACTOR, token)
        assert verified is not None
        assert (verified.user.id, verified.previous) == (user_id, None)
    assert user(engine, user_id).verified is True
    with write_session(engine) as session:
        assert verify_email(session, ACTOR, token) is None


def test_a_changed_address_becomes_the_users_only_when_verified(engine: Engine) -> None:
    fox = make_user(engine, "fox", email="fox@example.org")
    with write_session(engine) as session:
        token = issue_link(session, fox, LinkPurpose.VERIFY_EMAIL, email="fox@new.example.org")
    assert user(engine, fox).email == "fox@example.org"
    with write_session(engine) as session:
        assert verify_email(session, ACTOR, token) is not None
    assert (user(engine, fox).email, user(engine, fox).verified) == ("fox@new.example.org", True)


def test_an_address_taken_meanwhile_is_not_verified_for_another(engine: Engine) -> None:
    fox = make_user(engine, "fox", email="fox@example.org")
    with write_session(engine) as session:
        token = issue_link(session, fox, LinkPurpose.VERIFY_EMAIL, email="shared@example.org")
    make_user(engine, "otter", email="shared@example.org")
    with write_session(engine) as session:
        assert verify_email(session, ACTOR, token) is None
    assert user(engine, fox).email == "fox@example.org"
