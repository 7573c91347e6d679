"""The wheel ships every package: a new subpackage missing from pyproject.toml works in a checkout (editable
install) and breaks `pip install .` with an ImportError."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the layers of docs/architecture.md, top to bottom
TOP_LEVEL = ("cli", "dashboard", "jobs", "checks", "workload", "queries", "core")


def test_every_python_package_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(("idemdash", *init.parent.relative_to(ROOT).parts))
        for top in TOP_LEVEL
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert found >= {f"idemdash.{name}" for name in TOP_LEVEL}
    assert not found - listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


def test_the_license_and_the_changelog_the_metadata_names_are_there():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and all((ROOT / f).is_file() for f in project["license-files"])
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    changelog = (ROOT / "CHANGELOG.md").read_text()
    # Keep a Changelog: what is not released yet on top, then each release, the current version among them
    headings = [line for line in changelog.splitlines() if line.startswith("## ")]
    assert headings[0] == "## [Unreleased]" and any(h.startswith(f"## [{project['version']}] - ") for h in headings)


def test_the_repository_holds_no_symlinks():
    """A checkout made without symlinks (`core.symlinks=false`, Windows' default) is the same checkout: the one
    package is laid out by [tool.setuptools.package-dir], not by links."""
    import subprocess

    listing = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    links = [line.split("\t", 1)[1] for line in listing.splitlines() if line.startswith("120000 ")]
    assert links == []
    mapped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    assert {f"idemdash.{name}": name for name in TOP_LEVEL}.items() <= mapped.items()
