"""Every setting as an option of `regdesk serve`, made from `Settings` itself so none is missed.

`regdesk` takes the commonest settings before any command (`regdesk --currency EUR serve`), and
`serve` states a few of its own; `setting_options` gives `serve` the rest, each with its
environment variable in its help. The configuration reference (docs/, `make docs`) is read
from the same places, through `option_for`.
"""

from __future__ import annotations

import functools
import re
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import click
from pydantic.fields import FieldInfo

from regdesk.cli import Context, main
from regdesk.config import Settings

Command = TypeVar("Command", bound=Callable[..., Any])

# Secrets stay off the command line, which every user of the machine can read (ps, /proc).
ENVIRONMENT_ONLY = {
    "smtp_url": "it holds the mail server's password",
    "metrics_token": "it is a secret",
}


def environment_variable(name: str) -> str:
    return f"REGDESK_{name.upper()}"


def option_name(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def setting_options(command: Command) -> Command:
    """Decorates a command (below `@main.command()`, above its own options) with an option for
    each setting neither it nor `regdesk` itself takes, passed on as the settings' overrides."""
    taken = {p.name for p in (*main.params, *getattr(command, "__click_params__", ()))}
    added = [
        name for name in Settings.model_fields if name not in taken and name not in ENVIRONMENT_ONLY
    ]
    for name in reversed(added):  # click lists options in the reverse order of decoration
        field = Settings.model_fields[name]
        command = click.option(
            option_name(name),
            name,
            type=_click_type(field),
            help=f"{_first_sentence(field)} [{environment_variable(name)}]",
        )(command)
    if added:  # after the command's own options in its --help
        params: list[click.Parameter] = command.__click_params__  # type: ignore[attr-defined]
        params[:0] = params[-len(added) :]
        del params[-len(added) :]

    @functools.wraps(command)
    def with_overrides(*args: Any, **kwargs: Any) -> Any:
        context = click.get_current_context().find_object(Context)
        assert context is not None, "regdesk's main group makes the Context"
        for name in added:
            value = kwargs.pop(name)
            if value is not None:
                context.overrides[name] = value
        return command(*args, **kwargs)

    return typing.cast(Command, with_overrides)


def option_for(name: str) -> str | None:
    """How the setting `name` is given on the command line (`regdesk --currency`, `regdesk
    serve --signup`), or None for an environment-only one."""
    from regdesk.cli.serve import serve  # which imports this module

    if any(p.name == name for p in main.params):
        return f"regdesk {option_name(name)}"
    if any(p.name == name for p in serve.params):
        return f"regdesk serve {option_name(name)}"
    return None


def _click_type(field: FieldInfo) -> click.ParamType[Any]:
    annotation = field.annotation
    if typing.get_origin(annotation) is Literal:
        return click.Choice([str(choice) for choice in typing.get_args(annotation)])
    if annotation is int:
        return click.INT
    return click.STRING  # pydantic reads the rest (durations, dates) from text, as from the env


def _first_sentence(field: FieldInfo) -> str:
    return re.split(r"(?<=[a-z)])\. (?=[A-Z])", field.description or "", maxsplit=1)[0]
