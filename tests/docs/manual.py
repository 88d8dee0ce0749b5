"""The manual as the tests read it: its pages in reading order, and the fenced blocks of each
with the marks that say what to do with them (docs/development/index.md, The manual).

- `<!-- run -->` on the line before a fence: a sample the tests run; with `title="NAME"` on the
  fence, a file the tests save as NAME instead.
- `<!-- not run: why -->`: a sample the tests leave alone, saying why.
- `<!-- output -->`: a JSON block showing what the sample before it prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mkdocs.config import load_config

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# Languages whose blocks are programs: each must say whether it runs.
PROGRAMS = frozenset({"console", "bash", "sh", "shell", "python"})
FENCE = re.compile(r"^(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")
MARK = re.compile(r"^<!--\s*(run|output|not run:\s*\S.*?)\s*-->$")
TITLE = re.compile(r'title="([^"]+)"')


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, from 1
    language: str
    title: str | None
    mark: str | None  # "run", "output", "not run: ...", or None
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """The README, then every page of the manual: the navigation's order, then any other."""
    listed: list[Path] = []

    def walk(items: list[object]) -> None:
        for item in items:
            if isinstance(item, str):
                listed.append(DOCS / item)
            elif isinstance(item, dict):
                for value in item.values():
                    walk(value if isinstance(value, list) else [value])

    walk(load_config(str(ROOT / "mkdocs.yml"))["nav"])
    others = sorted(set(DOCS.rglob("*.md")) - set(listed))
    return [ROOT / "README.md", *[p for p in listed if p.exists()], *others]


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, info = opening["fence"], opening["info"].strip()
        end = next(
            (i for i in range(index + 1, len(lines)) if lines[i].startswith(fence)), len(lines)
        )
        language = info.split(" ", 1)[0].lower() if info else ""
        title = TITLE.search(info)
        found.append(
            Block(
                page,
                index + 1,
                language,
                title[1] if title else None,
                _mark_before(lines, index),
                "\n".join(lines[index + 1 : end]),
            )
        )
        index = end + 1
    return found


def _mark_before(lines: list[str], index: int) -> str | None:
    for previous in reversed(lines[:index]):
        if previous.strip():
            mark = MARK.match(previous.strip())
            return mark[1] if mark else None
    return None
