"""What the service imports is what `make run` installs: every third-party module that
src/regdesk imports comes from a distribution the runtime dependencies of pyproject.toml name
(or one they require), not from the development extra only. (httpx, used by webhook deliveries,
once sat in the extra: a fresh clone's `make run` failed at its first command.)"""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions, requires
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "regdesk"


def imported_top_level_modules() -> set[str]:
    found: set[str] = set()
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"regdesk", "__future__"}


def runtime_closure() -> set[str]:
    """The runtime dependencies, with what they require in turn (extras they ask for included)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    waiting = [Requirement(line) for line in project["dependencies"]]
    seen: set[str] = set()
    while waiting:
        requirement = waiting.pop()
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        for line in requires(requirement.name) or []:
            needed = Requirement(line)
            wanted_extras = requirement.extras or {""}
            if needed.marker is None or any(
                needed.marker.evaluate({"extra": extra}) for extra in wanted_extras
            ):
                waiting.append(needed)
    return seen


def test_every_module_the_service_imports_is_installed_by_make_run() -> None:
    distributions = packages_distributions()
    runtime = runtime_closure()
    outside = {
        module: sorted(distributions.get(module, ["(not installed)"]))
        for module in imported_top_level_modules()
        if not {canonicalize_name(d) for d in distributions.get(module, [])} & runtime
    }
    assert outside == {}, f"imported by src/regdesk, not a runtime dependency: {outside}"
