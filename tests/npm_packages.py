"""Packages from the npm registry that tests drive for real (axe-core in the browser, pg-transactional-outbox's own
Node code against the test database): installed once per prefix under tests/, by the first test that needs them; one
xdist worker installs, the others wait on the prefix's lock."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def install(prefix: str, packages: list[str], *, marker: str) -> Path:
    """``packages`` (pinned ``name@version``) into ``tests/<prefix>``, unless ``marker`` (a path below its
    node_modules) is there already; the prefix's folder. Fails the test, saying how, when npm cannot install them."""
    folder = TESTS / prefix
    installed = folder / "node_modules" / marker
    if installed.exists():
        return folder
    if not shutil.which("npm"):
        pytest.fail(
            f"npm is not on the PATH: install Node.js and npm (apt-get install nodejs npm), then "
            f"npm install --no-save --prefix tests/{prefix} {' '.join(packages)}",
            pytrace=False,
        )
    folder.mkdir(exist_ok=True)
    with open(folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed.exists():
            done = subprocess.run(
                ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(folder), *packages],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0 or not installed.exists():
                pytest.fail(f"npm install {' '.join(packages)} failed:\n{done.stderr[-2000:]}", pytrace=False)
    return folder
