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
# Modules that `ruff format` took past the limit (its one-argument-a-line layout adds about a fifth): each is
# split along its concerns and taken off this list; none may grow meanwhile
FORMATTED_OVER = {
    "checks/purging.py": 328,
    "checks/schema.py": 313,
    "core/diagnosis.py": 316,
    "core/parsers.py": 307,
    "core/profiles/custom.py": 310,
    "core/settings.py": 480,
    "dashboard/metrics.py": 339,
    "dashboard/purges.py": 383,
    "dashboard/schemas/keys.py": 343,
    "dashboard/schemas/outbox.py": 301,
    "dashboard/schemas/profile_dimensions.py": 404,
    "dashboard/schemas/profile_pages.py": 438,
    "dashboard/schemas/tables.py": 341,
    "jobs/partition_drops.py": 301,
    "queries/health.py": 308,
    "queries/pool_budget.py": 315,
    "queries/profile_dimensions.py": 310,
    "queries/profile_pages.py": 322,
    "queries/reclassify.py": 399,
    "queries/rollups.py": 393,
    "queries/search.py": 335,
    "queries/target.py": 337,
    "workload/client.py": 305,
    "workload/demo.py": 308,
}


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
        ["idemdash.core.settings", "idemdash.core.parsers", "idemdash.core.formatting", "idemdash.core.triage"],
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
    too_long = {
        path: lines for path, lines in sizes.items() if lines > max(MAX_MODULE_LINES, FORMATTED_OVER.get(path, 0))
    }
    assert not too_long, f"split these along their concerns: {too_long}"
    split = {path for path in FORMATTED_OVER if sizes.get(path, 0) <= MAX_MODULE_LINES}
    assert not split, f"take these off FORMATTED_OVER, they are within {MAX_MODULE_LINES} lines now: {split}"
