"""The README's promises: its commands are the ones CI runs and the CLI has."""
from __future__ import annotations

import re
from pathlib import Path

import click
from click.testing import CliRunner

from cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _shell_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def test_readme_opens_with_demo_then_test_command():
    demo, tests = _shell_blocks(README)[:2]
    assert demo.endswith("idemdash demo") and "'.[demo]'" in demo
    assert "pytest" in tests and "'.[test]'" in tests


def test_ci_runs_the_readme_test_command_verbatim():
    tests = _shell_blocks(README)[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci.splitlines()


def test_every_command_in_the_readme_table_exists():
    documented = set(re.findall(r"^\| `idemdash ([a-z-]+)", README, re.M))
    assert documented == set(main.list_commands(click.Context(main))), "README's CLI table and the CLI differ"
    for name in documented:
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0, result.output


def test_the_readme_installs_the_axe_core_ci_installs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (version,) = set(re.findall(r"axe-core@([0-9][0-9.]*[0-9])", ci))
    assert re.findall(r"axe-core@([0-9][0-9.]*[0-9])", README) == [version]
