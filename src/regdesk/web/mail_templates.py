"""The words of the mail regdesk sends, from templates beside the pages' (templates/mail/):
each message is `<name>.txt` and `<name>.html`, its two parts (accounts.md, E-mail). The HTML
part is autoescaped as every page is; the plain text is left as written, since no mail reader
interprets it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jinja2

from regdesk.web.pages import HERE

_environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates" / "mail"),
    autoescape=jinja2.select_autoescape(["html"], default_for_string=True),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render_mail(name: str, context: Mapping[str, Any]) -> tuple[str, str]:
    """The plain-text and the HTML part of the message `name`."""
    text = _environment.get_template(f"{name}.txt").render(context)
    html = _environment.get_template(f"{name}.html").render(context)
    return text, html
