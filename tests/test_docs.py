"""The README's promises: its commands are the ones CI runs and the CLI has."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import click
import pytest
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
    installed = {name for line in re.findall(r"^\s*(?:apt_install|apt-get install) ([^#>\n]*)", ci, re.M)
                 for name in line.split() if re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", name)}
    assert {"chromium", "prometheus", "iproute2", "nodejs", "npm"} <= installed, installed
    opening = README.split("## What it is", 1)[0]
    assert not [name for name in installed if f"`{name}`" not in opening], installed
    (apt_line,) = re.findall(r"`apt-get install ([a-z0-9 -]+)`", opening)
    assert set(apt_line.split()) == installed


def test_every_command_in_the_readme_table_exists():
    documented = set(re.findall(r"^\| `idemdash ([a-z-]+)", README, re.M))
    assert documented == set(main.list_commands(click.Context(main))), "README's CLI table and the CLI differ"
    for name in documented:
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0, result.output


DOCS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


OUTSIDE = re.compile(r"DESIGN(\.md| section| §|'s)|STYLE\.md|\bseeds?\b(?! [=N])|/work/|shared/", re.I)


# in code, "seed" is also a random generator's: only a numbered seed document counts
CODE_OUTSIDE = re.compile(r"DESIGN(\.md| section| §|'s)|STYLE\.md|\bseeds? \d{3}\b|/work/|shared/", re.I)


def _refers_outside(text: str, pattern: re.Pattern = OUTSIDE) -> bool:
    return bool(pattern.search(text)) and "--seed" not in text


def test_the_docs_stand_alone():
    """No reference to files this repository does not contain: a design file, articles, someone's machine."""
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}" for path in DOCS
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if _refers_outside(line)]
    assert not found, "\n".join(found)


SKIPPED_DIRS = {".git", ".venv", "build", "dist", "node_modules", "__pycache__", ".ci"}
LINE_COMMENT = {".sql": "--", ".toml": "#", ".js": "//", "": "#", ".service": "#", ".timer": "#", ".yml": "#",
                ".yaml": "#", ".conf": "#", ".env": "#", ".sh": "#"}


def _python_comments(source: str) -> list[tuple[int, str]]:
    """Every comment and docstring of a Python file, with its first line."""
    found = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((node.body[0].lineno, doc))
    return found


def _comments(path: Path) -> list[tuple[int, str]]:
    """The comments (and for Python the docstrings) of a code, template, style, SQL or deployment file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return _python_comments(text)
    found = []
    if path.suffix in (".html", ".js", ".css"):
        for pattern in (r"\{#.*?#\}", r"<!--.*?-->", r"/\*.*?\*/"):
            found += [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in re.finditer(pattern, text, re.S)]
    marker = LINE_COMMENT.get(path.suffix)
    if marker:
        found += [(n, line[line.index(marker):]) for n, line in enumerate(text.splitlines(), 1) if marker in line]
    return found


def _code_files() -> list[Path]:
    suffixes = {".py", ".sql", ".html", ".toml", ".js", ".css"}
    files = []
    for path in sorted(ROOT.rglob("*")):
        if SKIPPED_DIRS & set(path.relative_to(ROOT).parts) or not path.is_file():
            continue
        in_deploy = path.relative_to(ROOT).parts[0] == "deploy"
        if path.suffix in suffixes or path.name == "Dockerfile" or in_deploy:
            files.append(path)
    return files


@pytest.mark.system  # over a second: reads every comment and docstring of the tree
def test_comments_and_docstrings_stand_alone():
    """Code, SQL, templates, styles and deployment files point at docs/ for what they rely on, never outside."""
    files = _code_files()
    assert {"Dockerfile", "benchmark.sql", "web.py", "pyproject.toml"} <= {p.name for p in files}
    found = [f"{path.relative_to(ROOT)}:{n}: {text.strip()[:80]}" for path in files
             for n, text in _comments(path) if _refers_outside(text, CODE_OUTSIDE)]
    assert not found, "\n".join(found)


def test_the_comment_scan_sees_what_it_must():
    source = ('"""Module (DESIGN section 1)."""\nx = 1  # seed 003\ny = "seed 004 in a plain string"\n'
              'random.seed(7)  # the generator seed\n')
    assert [n for n, text in _python_comments(source) if _refers_outside(text, CODE_OUTSIDE)] == [2, 1]


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


def test_the_readme_installs_the_axe_core_ci_installs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (version,) = set(re.findall(r"axe-core@([0-9][0-9.]*[0-9])", ci))
    assert re.findall(r"axe-core@([0-9][0-9.]*[0-9])", README) == [version]
