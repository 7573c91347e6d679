"""ruff and mypy pass, as configured in pyproject.toml ([tool.ruff], [tool.mypy]).

ruff checks the whole repository (pyflakes, bugbear, import order, pyupgrade, complexity); mypy checks the
`idemdash` package. Both run from the repository root with the binaries of this venv, as `.ci/run` and a
developer would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cli", "dashboard", "jobs", "checks", "workload", "queries", "core")

pytestmark = pytest.mark.system


def _run(tool: str, *args: str) -> subprocess.CompletedProcess:
    binary = Path(sys.executable).with_name(tool)
    assert binary.exists(), f"{binary} is missing: pip install -e '.[test]'"
    return subprocess.run([str(binary), *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "All checks passed!" in result.stdout


def test_the_tree_is_formatted():
    result = _run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "already formatted" in result.stdout


def test_mypy_finds_nothing_in_the_package():
    result = _run("mypy")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    # every module of every subpackage was checked: mypy read the package package-dir lays out from the folders
    # (templates/ and static/ are the package's namespace packages idemdash.dashboard.templates, .static, ...)
    assets = sum(
        1
        for top in ("templates", "static")
        for d in [ROOT / top, *(ROOT / top).rglob("*")]
        if d.is_dir() and "__pycache__" not in d.parts
    )
    modules = (
        assets
        + len(list((ROOT / "package").glob("*.py")))
        + sum(len(list((ROOT / package).rglob("*.py"))) for package in PACKAGES)
    )
    assert result.stdout.startswith(f"Success: no issues found in {modules} source files"), result.stdout
