"""MkDocs hook: the references made from the code at build time, so that they cannot drift.

- `<!-- settings-reference -->` in a page becomes the table of every setting, read from
  `regdesk.config.Settings` and the `regdesk` command's options (cli/setting_options.py).
- `<!-- api-reference -->` becomes every path, method, scope and summary of the OpenAPI
  document `regdesk.app` serves at /openapi.json, which the site carries as api/openapi.json.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from functools import cache
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

SETTINGS_MARKER = "<!-- settings-reference -->"
API_MARKER = "<!-- api-reference -->"
OPENAPI_FILE = "api/openapi.json"
# What a default of None means, where "unset" alone would not say it.
UNSET_MEANS = {
    "secret_key": "unset: generated once, kept in the database",
    "public_url": "unset: the address `serve` listens on (loopback only)",
    "redis_url": "unset: counters in each process's memory",
    "smtp_url": "unset: mail waits in the outbox",
    "registration_edits_until": "unset: no deadline",
}


# --- MkDocs' events ------------------------------------------------------------------------


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, OPENAPI_FILE, content=openapi_text()))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if SETTINGS_MARKER in markdown:
        markdown = markdown.replace(SETTINGS_MARKER, settings_reference())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference(openapi()))
    return markdown


# --- the configuration reference -----------------------------------------------------------


def settings_reference() -> str:
    """A section per setting, headed by its variable: its meaning, name, option and default."""
    from regdesk.cli.setting_options import ENVIRONMENT_ONLY, environment_variable, option_for
    from regdesk.config import Settings

    sections = []
    for name, field in Settings.model_fields.items():
        option = option_for(name)
        if option is None:
            option_text = f"none, environment only: {ENVIRONMENT_ONLY[name]}"
        else:
            option_text = f"`{option}`"
        sections.append(
            f"### {environment_variable(name)}\n\n"
            f"{' '.join((field.description or '').split())}\n\n"
            f"Setting `{name}` · option {option_text} · default "
            f"{_default_text(name, field.default)}\n"
        )
    return "\n".join(sections)


def _default_text(name: str, default: Any) -> str:
    if default is None:
        return UNSET_MEANS.get(name, "unset")
    if isinstance(default, dt.timedelta):
        return f"`{_iso_duration(default)}`"
    if default == "":
        return "empty"
    return f"`{default}`"


def _iso_duration(value: dt.timedelta) -> str:
    days, seconds = value.days, value.seconds
    text = f"P{days}D" if days else "P"
    if seconds:
        text += f"T{seconds}S"
    return text


def _cell(text: str) -> str:
    """Text fit for one cell of a Markdown table."""
    return " ".join(text.split()).replace("|", "\\|")


# --- the API reference ---------------------------------------------------------------------


@cache
def openapi() -> dict[str, Any]:
    """The document /openapi.json serves, from the app as the code builds it now."""
    from regdesk.app import create_app
    from regdesk.config import load_settings

    document: dict[str, Any] = create_app(load_settings(database_url="sqlite://")).openapi()
    return document


def openapi_text() -> str:
    return json.dumps(openapi(), indent=2, ensure_ascii=False) + "\n"


def api_reference(document: dict[str, Any]) -> str:
    """Every operation by tag (a table, then each one's body and answers), then the scopes."""
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            tag = (operation.get("tags") or ["Other"])[0]
            by_tag.setdefault(tag, []).append((method.upper(), path, operation))
    parts = [_scope_table(document)]
    for tag, operations in by_tag.items():
        parts.append(f"## {tag}\n")
        parts.append("| method | path | scope | summary |\n|---|---|---|---|")
        parts.extend(
            f"| `{method}` | `{path}` | {_scopes(operation)} "
            f"| {_cell(operation.get('summary', ''))} |"
            for method, path, operation in operations
        )
        parts.append("")
        for method, path, operation in operations:
            parts.append(_operation(document, method, path, operation))
    parts.append(_schemas(document))
    return "\n".join(parts)


def _scope_table(document: dict[str, Any]) -> str:
    flows = document["components"]["securitySchemes"]["regdesk"]["flows"]
    service = flows["clientCredentials"]["scopes"]
    on_behalf = flows["authorizationCode"]["scopes"]
    rows = [
        "## Scopes\n",
        "| scope | what it allows | as a service (client_credentials) "
        "| for a user (authorization code) |",
        "|---|---|---|---|",
    ]
    for scope in dict.fromkeys([*service, *on_behalf]):
        meaning = service.get(scope) or on_behalf[scope]
        rows.append(
            f"| `{scope}` | {_cell(meaning)} | {'yes' if scope in service else ''} "
            f"| {'yes' if scope in on_behalf else ''} |"
        )
    return "\n".join(rows) + "\n"


def _scopes(operation: dict[str, Any]) -> str:
    """`a` or `b`: any one of the requirements opens the route; none: no token needed."""
    alternatives = [
        " ".join(f"`{scope}`" for scope in scopes)
        for requirement in operation.get("security", [])
        for scopes in requirement.values()
    ]
    return " or ".join(alternatives) if alternatives else "none"


def _operation(document: dict[str, Any], method: str, path: str, operation: dict[str, Any]) -> str:
    lines = [
        f"### {method} {path}\n",
        f"**{operation.get('summary', '')}.** Scope: {_scopes(operation)}.\n",
    ]
    if description := operation.get("description"):
        lines.append(f"{description.strip()}\n")
    parameters = operation.get("parameters", [])
    if parameters:
        lines.append("| parameter | in | type | required | meaning |\n|---|---|---|---|---|")
        lines.extend(
            f"| `{p['name']}` | {p['in']} | {_type(p.get('schema', {}))} "
            f"| {'yes' if p.get('required') else 'no'} | {_cell(p.get('description', ''))} |"
            for p in parameters
        )
        lines.append("")
    body = operation.get("requestBody", {}).get("content", {})
    for media_type, content in body.items():
        lines.append(f"Body (`{media_type}`): {_type(content.get('schema', {}))}.\n")
    lines.append("| answer | meaning | body |\n|---|---|---|")
    for status, response in operation.get("responses", {}).items():
        schemas = [c.get("schema", {}) for c in response.get("content", {}).values()]
        shown = ", ".join(_type(s) for s in schemas) if schemas else ""
        lines.append(f"| {status} | {_cell(response.get('description', ''))} | {shown} |")
    lines.append("")
    return "\n".join(lines)


def _schemas(document: dict[str, Any]) -> str:
    parts = ["## Shapes\n", "The bodies named above, member by member.\n"]
    for name, schema in document["components"]["schemas"].items():
        parts.append(f"### {name}\n")
        if description := schema.get("description"):
            parts.append(f"{_cell(description)}\n")
        properties = schema.get("properties", {})
        if not properties:
            parts.append(f"{_type(schema)}.\n")
            continue
        required = set(schema.get("required", []))
        parts.append("| member | type | required | meaning |\n|---|---|---|---|")
        parts.extend(
            f"| `{member}` | {_type(value)} | {'yes' if member in required else 'no'} "
            f"| {_cell(value.get('description', ''))} |"
            for member, value in properties.items()
        )
        parts.append("")
    return "\n".join(parts)


def _type(schema: dict[str, Any]) -> str:
    """A schema in a few words: `string`, `array of` [User](#user), `integer or null`."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    for combination in ("anyOf", "oneOf", "allOf"):
        if combination in schema:
            return " or ".join(dict.fromkeys(_type(s) for s in schema[combination]))
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    return f"`{kind}`"


def _anchor(heading: str) -> str:
    """The id MkDocs' table of contents gives a heading (its default slugify)."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower())
