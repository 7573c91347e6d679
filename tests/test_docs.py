"""The README's promises: its commands are the ones CI runs; the docs' command table is the CLI's."""

from __future__ import annotations

import re
from pathlib import Path

import click
from click.testing import CliRunner

from idemdash.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _shell_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def test_readme_opens_with_demo_then_test_command():
    demo, everything, tests = _shell_blocks(README)[:3]
    assert demo.endswith("idemdash demo") and "'.[demo]'" in demo
    assert everything == "bash .ci/run"  # what passes on a fresh machine: CI's own script installs what tests need
    assert "pytest" in tests and "'.[test]'" in tests


def test_ci_runs_the_readme_test_command_verbatim():
    tests = _shell_blocks(README)[2]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip("\n").splitlines()[-1] == tests


def test_the_readme_names_every_debian_package_ci_installs():
    """The test command alone passes only where what .ci/run installs is there: the README names all of it (it once
    left out promtool's `prometheus`, and the README's command failed one test on a fresh machine)."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    installed = {
        name
        for line in re.findall(r"^\s*(?:apt_install|apt-get install) ([^#>\n]*)", ci, re.M)
        for name in line.split()
        if re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", name)
    }
    assert {"chromium", "prometheus", "iproute2", "nodejs", "npm"} <= installed, installed
    opening = README.split("## What it is", 1)[0]
    assert not [name for name in installed if f"`{name}`" not in opening], installed
    (apt_line,) = re.findall(r"`apt-get install ([a-z0-9 -]+)`", opening)
    assert set(apt_line.split()) == installed


def test_every_command_in_the_command_table_exists():
    table = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `idemdash ([a-z-]+)", table, re.M))
    assert documented == set(main.list_commands(click.Context(main))), "docs/cli.md's table and the CLI differ"
    for name in documented:
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0, result.output


DOCS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_relative_link_in_the_docs_exists():
    missing = []
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if not (path.parent / target).exists():
                missing.append(f"{path.relative_to(ROOT)} -> {target}")
    assert not missing, missing


def test_the_interface_lists_every_route_setting_and_command(make_app):
    from idemdash.core.settings import SETTINGS

    interface = (ROOT / "docs" / "interface.md").read_text(encoding="utf-8")
    app = make_app()
    routes = {rule.rule for rule in app.url_map.iter_rules()}
    assert len(routes) > 30
    missing = [route for route in routes if route not in interface]
    missing += [s.env for s in SETTINGS if f"`{s.env}`" not in interface]
    missing += [name for name in main.list_commands(click.Context(main)) if f"`idemdash {name}`" not in interface]
    assert not missing, f"add to docs/interface.md: {missing}"


def test_the_docs_install_the_axe_core_ci_installs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (version,) = set(re.findall(r"axe-core@([0-9][0-9.]*[0-9])", ci))
    development = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    assert re.findall(r"axe-core@([0-9][0-9.]*[0-9])", development) == [version]
    assert "axe-core@" not in README  # one place to update: the README links there


def test_the_readme_stays_short_and_every_docs_page_is_in_the_site():
    """The README is a front door (what it is, the two commands, connecting, links); the rest lives in docs/, and
    a page missing from mkdocs.yml's nav would be built but unreachable."""
    assert len(README.splitlines()) <= 200
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    pages = {path.name for path in (ROOT / "docs").glob("*.md")}
    assert pages == set(re.findall(r":\s*([a-z-]+\.md)\s*$", nav, re.M))
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README):
        assert (ROOT / image).is_file() and (ROOT / image).stat().st_size < 300_000, image
