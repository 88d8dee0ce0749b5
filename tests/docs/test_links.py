"""A fresh clone has every file its README and manual link to, and none of them links outside
the repository (issue 22: the README pointed at ../shared, which a clone does not have)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.docs.manual import DOCS, ROOT, pages
from tests.docs.test_build import GENERATED

# [text](target "title"), ![alt](target), <https://...>, href="..." and src="..."
LINKS = re.compile(
    r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"
    r"|<((?:https?|mailto):[^>\s]+)>"
    r"|(?:href|src)=\"([^\"]+)\""
)
CODE = re.compile(r"^(```+|~~~+).*?^\1\s*$|`[^`\n]+`", re.MULTILINE | re.DOTALL)
# The reader's own regdesk, which the samples speak to: not a site elsewhere.
OWN_HOSTS = frozenset({"127.0.0.1", "localhost"})


def links(page: Path) -> list[str]:
    text = CODE.sub("", page.read_text(encoding="utf-8"))
    return [next(group for group in found.groups() if group) for found in LINKS.finditer(text)]


def problem(page: Path, target: str) -> str | None:
    """What is wrong with a link of `page` to `target`, or None."""
    parts = urlsplit(target)
    if parts.scheme in ("http", "https"):
        if parts.hostname in OWN_HOSTS:
            return None
        return "links outside the repository"
    if parts.scheme or target.startswith("//"):
        return "links outside the repository"
    if not parts.path:
        return None  # an anchor of the page itself (the build checks anchors)
    if parts.path.startswith("/"):
        return "an absolute path: a clone elsewhere does not have it"
    resolved = (page.parent / parts.path).resolve()
    if not resolved.is_relative_to(ROOT):
        return "leaves the repository"
    if resolved.is_relative_to(DOCS) and resolved.relative_to(DOCS).as_posix() in GENERATED:
        return None  # made at build time from the code (docs/hooks/reference.py)
    if not resolved.exists():
        return "names no file of the repository"
    return None


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_link_names_a_file_of_the_repository(page: Path) -> None:
    wrong = [(target, why) for target in links(page) if (why := problem(page, target))]
    assert not wrong, wrong


def test_the_check_sees_links_and_refuses_bad_ones(tmp_path: Path) -> None:
    page = DOCS / "index.md"
    assert "getting-started.md" in links(page)
    assert problem(page, "getting-started.md#the-demo") is None
    assert problem(page, "api/openapi.json") is None
    assert problem(page, "nowhere.md") == "names no file of the repository"
    assert problem(page, "../../shared/spec/api.md") == "leaves the repository"
    assert problem(ROOT / "README.md", "../shared/STYLE.md") == "leaves the repository"
    assert problem(page, "https://example.org/") == "links outside the repository"
    assert problem(page, "http://127.0.0.1:8000/admin") is None
    written = tmp_path / "page.md"
    written.write_text("[a](a.md) `[not](a link)`\n```sh\n[b](b.md)\n```\n<https://x.org>\n")
    assert links(written) == ["a.md", "https://x.org"]
