"""The house's shape (STYLE.md): the package graph has no cycle, and no package imports one
above it. Every import counts, those inside functions and under TYPE_CHECKING included.

A node is a package of regdesk (`regdesk.users`) or a module at its top (`regdesk.config`).
LAYERS puts each in a layer, lowest first: a package may import its own layer and those
below. A package nobody placed fails here, so that its author decides where it stands.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

import regdesk

SOURCE = Path(regdesk.__file__).parent

LAYERS: list[set[str]] = [
    # What everything stands on; none of it knows a thing of the convention's records.
    {
        "config",
        "transport",
        "db",
        "errors",
        "formats",
        "security",
        "keys",
        "fields",
        "pagination",
        "schemas",
        "ratelimit",
        "deps",
        "quick_reads",
        "documents",
        "outbox",
        "mail",
        "observability",
    },
    {"audit", "oauth", "events", "roles"},  # tokens and scopes; the event; roles
    {"users"},
    {"departments"},
    {"volunteers", "registrations"},
    {"web"},  # pages: their infrastructure (render, CSRF, the visitor), consent, volunteering
    {"accounts", "bodies"},  # a person's own account; request bodies' limits (render pages)
    {"oidc"},  # OpenID Connect on the OAuth server: ID tokens, claims, userinfo, logout
    {"webhooks"},  # events of the records, written with their change, delivered signed
    {"models", "migrations", "transfer", "demo"},  # every table at once; import and export
    {"backups"},  # the whole database into a file and back (its schema revision read)
    {"admin", "desk"},  # the organizers' pages; the registration desk and its ticket API
    {"app", "cli", "__main__"},
]
# "db", "config" and "errors" import nothing of the domain (issue 14): the lowest layer's own.
FOUNDATION = {"db", "config", "errors"}


def node(module: str) -> str:
    """`regdesk.users.service` -> `users`; `regdesk.config` -> `config`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        if "versions" in parts:  # migrations' revisions are history, each frozen
            continue
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def submodule(name: str) -> bool:
    return (SOURCE / name).is_dir() or (SOURCE / f"{name}.py").exists()


def imported(module: str, path: Path) -> Iterator[str]:
    """Every regdesk module `path` imports, anywhere in it."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for found in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(found, ast.Import):
            yield from (alias.name for alias in found.names)
        elif isinstance(found, ast.ImportFrom):
            base = found.module or ""
            if found.level:
                anchor = package.rsplit(".", found.level - 1)[0] if found.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            if base == "regdesk":  # `from regdesk import ratelimit`, not its `__version__`
                yield from (f"regdesk.{a.name}" for a in found.names if submodule(a.name))
            else:
                yield base


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, path in modules():
        for target in imported(module, path):
            if target.startswith("regdesk.") and node(target) != node(module):
                edges[node(module)].add(node(target))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(start: str) -> None:
        index[start] = low[start] = len(index)
        stack.append(start)
        for target in sorted(edges.get(start, ())):
            if target not in index:
                visit(target)
                low[start] = min(low[start], low[target])
            elif target in stack:
                low[start] = min(low[start], index[target])
        if low[start] == index[start]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == start:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for start in sorted(edges):
        if start not in index:
            visit(start)
    return found


def layer(name: str) -> int:
    for position, members in enumerate(LAYERS):
        if name in members:
            return position
    raise LookupError(name)


def test_the_package_graph_has_no_cycle() -> None:
    assert cycles(graph()) == []


def test_every_package_has_its_place() -> None:
    every = {node(module) for module, _ in modules()} - {""}
    placed = set().union(*LAYERS)
    assert sorted(every - placed) == [], "put each new package in LAYERS"


def test_no_package_imports_one_above_it() -> None:
    upward = [
        f"{source} (layer {layer(source)}) imports {target} (layer {layer(target)})"
        for source, targets in graph().items()
        for target in sorted(targets)
        if layer(target) > layer(source)
    ]
    assert upward == []


@pytest.mark.parametrize("foundation", sorted(FOUNDATION))
def test_the_foundation_imports_nothing_of_the_domain(foundation: str) -> None:
    below = LAYERS[0]
    assert sorted(graph().get(foundation, set()) - below) == []


def test_the_check_sees_what_it_should() -> None:
    """The walk is not vacuous: it finds imports inside functions, and relative ones."""
    assert "oauth" in graph()["users"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
