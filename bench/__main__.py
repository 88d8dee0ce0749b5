"""`make bench`: run every benchmark, print a table, write build/bench.json."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from pathlib import Path

from bench import desk, http, report, stampede, webhooks


def main() -> None:
    results = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "http": http.run(),
        "desk": desk.run(),
        "stampede": stampede.run(),
        "webhooks": webhooks.run(),
    }
    out = Path("build/bench.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    table = report.markdown(results)
    out.with_suffix(".md").write_text(table + "\n")
    print(f"\n{table}\n\nwritten to {out} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
