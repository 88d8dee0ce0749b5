"""The manual builds strictly, with nothing fetched from elsewhere, and its references are made
from the code: every setting, every operation (docs/hooks/reference.py)."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from regdesk.app import create_app
from regdesk.config import Settings, load_settings
from tests.docs.manual import ROOT


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reference_hook", ROOT / "docs/hooks/reference.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _hook()
# Files of the site the hook makes at build time; pages may link to them.
GENERATED = frozenset({reference.OPENAPI_FILE})
MKDOCS = Path(sys.executable).with_name("mkdocs")
EXTERNAL = re.compile(r"""<(?:link|script|img|iframe)\b[^>]*(?:href|src)=["'](?:https?:)?//""")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mkdocs build --strict`, as `make test` and `make docs` run it."""
    built = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(built)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    return built


def text_of(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_no_page_loads_anything_from_elsewhere(site: Path) -> None:
    loading = [
        (page.relative_to(site).as_posix(), found.group(0))
        for page in site.rglob("*.html")
        for found in EXTERNAL.finditer(page.read_text(encoding="utf-8"))
    ]
    assert not loading, loading
    assert len(list(site.rglob("*.html"))) > 15  # every page was built


def test_every_setting_is_in_the_configuration_reference(site: Path) -> None:
    shown = " ".join(text_of(site / "operators/configuration/index.html").split())
    for name, field in Settings.model_fields.items():
        variable = f"REGDESK_{name.upper()}"
        section = shown.split(f"{variable}¶", 1)[1].split("¶", 1)[0]
        assert " ".join((field.description or "").replace("`", "").split())[:60] in section, (
            variable
        )
        assert f"Setting {name} · option " in section, variable
        assert "option regdesk " in section or "environment only" in section, variable


def test_every_operation_is_in_the_api_reference(site: Path) -> None:
    document = create_app(load_settings(database_url="sqlite://")).openapi()
    shown = text_of(site / "api/index.html")
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert f"{method.upper()} {path}" in shown, (method, path)
            for requirement in operation.get("security", []):
                for scope in requirement.get("regdesk", []):
                    assert scope in shown
    published = json.loads((site / reference.OPENAPI_FILE).read_text(encoding="utf-8"))
    assert published == document


def test_the_reference_names_each_route_scope() -> None:
    """The table's scope column, from the operation's security requirements."""
    either = {"security": [{"regdesk": ["registration:read"]}, {"regdesk": ["con:read"]}]}
    assert reference._scopes(either) == "`registration:read` or `con:read`"
    assert reference._scopes({}) == "none"
