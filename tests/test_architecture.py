"""The architecture holds: layers and no cycles (import-linter), a Flask-free core and job commands, small modules.

docs/architecture.md draws the layers; pyproject.toml's [tool.importlinter] contracts are its one-page summary.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cli", "dashboard", "jobs", "checks", "workload", "queries", "core")
MAX_MODULE_LINES = 300


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.system  # over a second: fresh interpreters importing the package
@pytest.mark.parametrize(
    "modules",
    [
        ["idemdash.core.settings", "idemdash.core.parsers", "idemdash.core.time_parsers", "idemdash.core.formatting"],
        ["idemdash.core.triage"],
        ["idemdash.cli.jobs"],  # idemdash purge, idemdash scheduler
        ["idemdash.cli.check"],  # idemdash check
        ["idemdash.cli.database"],  # idemdash migrate, idemdash init-app-schema
        ["idemdash.jobs.scheduler", "idemdash.jobs.purge_run", "idemdash.checks", "idemdash.queries.target"],
    ],
)
def test_the_scheduler_purge_check_and_migrate_never_load_flask(modules):
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('flask', 'werkzeug', "
        "'jinja2', 'flask_wtf', 'htmx_flask') or m.startswith('idemdash.dashboard'))))"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [], f"{modules} load the web stack"


@pytest.mark.system  # over a second: fresh interpreters importing the package
def test_the_command_line_resolves_each_command_without_loading_the_others():
    result = _run_python(
        "import json, sys\nfrom idemdash.cli import main\nimport click\n"
        "main.get_command(click.Context(main), 'purge')\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "                        if m.startswith(('flask', 'idemdash.cli.')))))"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["idemdash.cli.common", "idemdash.cli.fleet", "idemdash.cli.jobs"]


def test_no_module_is_over_about_300_lines():
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert len(sizes) > 40
    too_long = {path: lines for path, lines in sizes.items() if lines > MAX_MODULE_LINES}
    assert not too_long, f"split these along their concerns: {too_long}"
