"""`make run` and `make test` install exactly what uv.lock holds (issue 21): every distribution
in the environment the tests run in is one the lock names, at the version it names. (A release
of any dependency then cannot reach a convention's server unless `make upgrade` took it in.)"""

from __future__ import annotations

import sys
import tomllib
from importlib.metadata import distributions
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def locked_versions() -> dict[str, set[str]]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    versions: dict[str, set[str]] = {}
    for package in lock["package"]:
        versions.setdefault(canonicalize_name(package["name"]), set()).add(package["version"])
    return versions


def test_every_installed_distribution_is_the_locked_version() -> None:
    locked = locked_versions()
    installed = {
        canonicalize_name(distribution.metadata["Name"]): distribution.version
        for distribution in distributions(path=[p for p in sys.path if "site-packages" in p])
    }
    assert installed, "no installed distributions found"
    different = {
        name: (version, sorted(locked.get(name, {"not in uv.lock"})))
        for name, version in installed.items()
        if version not in locked.get(name, set())
    }
    assert different == {}, f"installed (version, locked): {different}"
