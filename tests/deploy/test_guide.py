"""The deployment guide quotes deploy/ as it is (issue 23): the files tests/deploy runs are the
ones an operator reads, so the page cannot drift from what is tested."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.support import ENVIRONMENT, ROOT, SITE
from tests.docs.manual import DOCS, blocks

GUIDE = DOCS / "operators" / "deployment.md"


@pytest.mark.parametrize("file", [SITE, ENVIRONMENT], ids=lambda file: file.name)
def test_the_guide_quotes_the_file_the_test_runs(file: Path) -> None:
    name = file.relative_to(ROOT).as_posix()
    quoted = [block for block in blocks(GUIDE) if block.title == name]
    assert len(quoted) == 1, f"{GUIDE.name} quotes {name} {len(quoted)} times, not once"
    assert quoted[0].text + "\n" == file.read_text(encoding="utf-8")
