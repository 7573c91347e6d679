"""Settings: defaults, parsing, clear errors, overrides, DSN redaction, and their documentation."""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import pytest

from idemdash.core import parsers
from idemdash.core import settings as config
from idemdash.core.dsn import redact_dsn
from idemdash.core.profiles import PROFILES
from idemdash.core.settings import BY_NAME, PREFIX, SETTINGS, ConfigError, Setting, Settings, load

ROOT = Path(__file__).resolve().parent.parent

# The settings the foundation relies on (others come and go as features land).
CORE_NAMES = {
    "DATABASE_URL",
    "APP_SCHEMA",
    "KEYS_TABLE",
    "INBOX_TABLE",
    "OUTBOX_TABLE",
    "SECRET_KEY",
    "DEFAULT_LEASE_SECONDS",
    "STATEMENT_TIMEOUT_MS",
    "LOCK_TIMEOUT_MS",
    "POOL_MIN_SIZE",
    "POOL_MAX_SIZE",
    "RUN_JOBS",
    "BIND",
    "WORKERS",
}


@pytest.fixture
def synthetic(monkeypatch):
    """Replace the declared settings with one of each kind, so parsing is tested independently of features."""
    declared = (
        Setting("FLAG", False, parsers.boolean, "A boolean."),
        Setting("COUNT", 7, parsers.positive_int, "A positive integer."),
        Setting("MODE", "none", parsers.choice("none", "basic", "proxy"), "A choice."),
        Setting("NAME", "app", parsers.identifier, "An identifier."),
        Setting("TEXT", "", str, "Free text."),
    )
    monkeypatch.setattr(config, "SETTINGS", declared)
    return declared


# ---------------------------------------------------------------------------
# the declarations


def test_settings_are_declared_once_with_docs():
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    assert set(BY_NAME) == set(names)
    assert set(names) >= CORE_NAMES
    for setting in SETTINGS:
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", setting.name), setting.name
        assert setting.env == PREFIX + setting.name == "IDEMDASH_" + setting.name
        assert setting.doc.strip(), f"{setting.env} has no documentation"


def test_every_default_is_a_value_its_parser_accepts():
    for setting in SETTINGS:
        raw = str(setting.default).lower() if isinstance(setting.default, bool) else str(setting.default)
        assert setting.parse(raw) == setting.default, setting.env


def test_defaults_when_the_environment_is_empty():
    values = load({})
    assert values == Settings()
    assert config.read_values({}) == {s.name: s.default for s in SETTINGS}
    assert all(getattr(values, s.attribute) == s.default for s in SETTINGS)
    assert values.database_url == ""
    assert values.app_schema == "app"
    assert (values.keys_table, values.inbox_table, values.outbox_table) == (
        "idempotency_request",
        "processed_message",
        "outbox_event",
    )
    assert values.run_jobs is False
    assert values.default_lease_seconds == 300
    assert values.statement_timeout_ms == 3000
    assert values.bind == "127.0.0.1:8000"


def test_load_reads_os_environ_by_default(monkeypatch):
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)
    monkeypatch.setenv("IDEMDASH_APP_SCHEMA", "billing")
    monkeypatch.setenv("IDEMDASH_RUN_JOBS", "yes")
    values = load()
    assert values.app_schema == "billing"
    assert values.run_jobs is True
    assert values.workers == BY_NAME["WORKERS"].default


def test_unrelated_environment_variables_are_ignored():
    assert load({"DATABASE_URL": "postgresql://x/y", "APP_SCHEMA": "nope", "idemdash_app_schema": "x"}) == load({})


def test_real_settings_parse_their_values():
    values = load(
        {
            "IDEMDASH_RUN_JOBS": "on",
            "IDEMDASH_WORKERS": " 4 ",
            "IDEMDASH_APP_SCHEMA": "Ops Schema",
            "IDEMDASH_KEYS_TABLE": 'Idem"Keys',
            "IDEMDASH_OUTBOX_TABLE": "x" * 63,
            "IDEMDASH_DATABASE_URL": "host=db dbname=app",
        }
    )
    assert values.run_jobs is True
    assert values.workers == 4
    assert values.app_schema == "Ops Schema"
    assert values.keys_table == 'Idem"Keys'
    assert values.outbox_table == "x" * 63
    assert values.database_url == "host=db dbname=app"


@pytest.mark.parametrize(
    ("name", "raw", "hint"),
    [
        ("RUN_JOBS", "maybe", "boolean"),
        ("DEFAULT_LEASE_SECONDS", "0", "positive integer"),
        ("POOL_MAX_SIZE", "-1", "positive integer"),
        ("STATEMENT_TIMEOUT_MS", "3s", "3s"),
        ("APP_SCHEMA", "", "identifier"),
        ("KEYS_TABLE", "k" * 64, "identifier"),
    ],
)
def test_real_settings_reject_bad_values_naming_the_variable(name, raw, hint):
    with pytest.raises(ConfigError) as caught:
        load({PREFIX + name: raw})
    assert str(caught.value).startswith(f"{PREFIX}{name}: ")
    assert hint in str(caught.value)


# ---------------------------------------------------------------------------
# parsing (one setting of each kind)


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "True", "yes", "on", " On "])
def test_true_booleans(synthetic, raw):
    assert config.read_values({"IDEMDASH_FLAG": raw})["FLAG"] is True


@pytest.mark.parametrize("raw", ["0", "false", "FALSE", "no", "off", ""])
def test_false_booleans(synthetic, raw):
    assert config.read_values({"IDEMDASH_FLAG": raw})["FLAG"] is False


@pytest.mark.parametrize(("raw", "expected"), [("60", 60), ("1", 1), (" 1500 ", 1500), ("+3", 3)])
def test_integers(synthetic, raw, expected):
    value = config.read_values({"IDEMDASH_COUNT": raw})["COUNT"]
    assert value == expected and isinstance(value, int)


@pytest.mark.parametrize(
    ("raw", "expected"), [("none", "none"), ("basic", "basic"), ("PROXY", "proxy"), (" Basic ", "basic")]
)
def test_choices(synthetic, raw, expected):
    assert config.read_values({"IDEMDASH_MODE": raw})["MODE"] == expected


def test_defaults_of_each_kind(synthetic):
    assert config.read_values({}) == {"FLAG": False, "COUNT": 7, "MODE": "none", "NAME": "app", "TEXT": ""}


def test_strings_are_kept_as_given(synthetic):
    values = config.read_values({"IDEMDASH_TEXT": "  https://wiki/{scope}/{key}  ", "IDEMDASH_NAME": "Ops Schema"})
    assert values["TEXT"] == "  https://wiki/{scope}/{key}  "
    assert values["NAME"] == "Ops Schema"


@pytest.mark.parametrize(
    ("name", "raw", "hint"),
    [
        ("FLAG", "maybe", "boolean"),
        ("FLAG", "2", "boolean"),
        ("COUNT", "0", "positive integer"),
        ("COUNT", "-1", "positive integer"),
        ("COUNT", "3s", "3s"),
        ("COUNT", "1.5", "1.5"),
        ("COUNT", "", "''"),
        ("MODE", "ldap", "none, basic, proxy"),
        ("MODE", "", "none, basic, proxy"),
        ("NAME", "", "identifier"),
        ("NAME", " app", "identifier"),
        ("NAME", "k" * 64, "identifier"),
        ("NAME", "inbox\n", "identifier"),
    ],
)
def test_bad_values_name_the_variable(synthetic, name, raw, hint):
    with pytest.raises(ConfigError) as caught:
        config.read_values({PREFIX + name: raw})
    message = str(caught.value)
    assert message.startswith(f"{PREFIX}{name}: "), message
    assert hint in message
    assert isinstance(caught.value, ValueError)


def test_a_bad_value_is_reported_even_with_good_ones_around(synthetic):
    with pytest.raises(ConfigError, match="IDEMDASH_COUNT"):
        config.read_values({"IDEMDASH_MODE": "basic", "IDEMDASH_COUNT": "many", "IDEMDASH_FLAG": "1"})


# ---------------------------------------------------------------------------
# overrides


def test_overrides_win_over_the_environment():
    env = {"IDEMDASH_APP_SCHEMA": "from_env", "IDEMDASH_DATABASE_URL": "host=env", "IDEMDASH_WORKERS": "4"}
    values = load(env, APP_SCHEMA="from_override", DATABASE_URL="host=override")
    assert values.app_schema == "from_override"
    assert values.database_url == "host=override"
    assert values.workers == 4  # not overridden: still from the environment


def test_an_override_hides_a_bad_environment_value():
    assert load({"IDEMDASH_RUN_JOBS": "garbage"}, RUN_JOBS=True).run_jobs is True


def test_unknown_overrides_are_rejected():
    with pytest.raises(ConfigError, match="unknown settings: NOT_A_SETTING, app_schema"):
        load({}, NOT_A_SETTING=1, app_schema="x", APP_SCHEMA="app")


# ---------------------------------------------------------------------------
# redact_dsn


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        ("postgresql://alice:s3cret@db.example:5432/app", "postgresql://alice:***@db.example:5432/app"),
        ("postgres://alice:s3cret@db/app?sslmode=require", "postgres://alice:***@db/app?sslmode=require"),
        ("postgresql://alice:p%40ss%3Aw0rd@db/app", "postgresql://alice:***@db/app"),
        ("postgresql://alice:pa:ss@word@db/app", "postgresql://alice:***@db/app"),
        ("postgresql://:s3cret@db/app", "postgresql://:***@db/app"),
        ("postgresql://alice:s3cret@h1:5432,h2:5433/app", "postgresql://alice:***@h1:5432,h2:5433/app"),
        (
            "postgresql://db/app?user=alice&password=s3cret&sslmode=require",
            "postgresql://db/app?user=alice&password=***&sslmode=require",
        ),
        ("host=db user=alice password=s3cret dbname=app", "host=db user=alice password=*** dbname=app"),
        ("host=db password = s3cret dbname=app", "host=db password = *** dbname=app"),
        ("host=db password='s3 cr et' dbname=app", "host=db password=*** dbname=app"),
        (r"host=db password='it\'s s3cret' dbname=app", "host=db password=*** dbname=app"),
        ("password=s3cret", "password=***"),
        ("host=db PASSWORD=s3cret", "host=db PASSWORD=***"),
    ],
)
def test_redact_dsn_hides_passwords(dsn, expected):
    redacted = redact_dsn(dsn)
    assert redacted == expected
    assert "s3cret" not in redacted and "s3 cr et" not in redacted and "p%40ss" not in redacted


@pytest.mark.parametrize(
    "dsn",
    [
        "",
        "postgresql://alice@db.example:5432/app",
        "postgresql://db/app",
        "postgresql:///app?host=/var/run/postgresql",
        "postgresql://db/app?application_name=my app",
        "host=db user=alice dbname=app",
        "host=/tmp/pg dbname=app passfile=/home/alice/.pgpass",
    ],
)
def test_redact_dsn_leaves_passwordless_dsns_alone(dsn):
    assert redact_dsn(dsn) == dsn


def test_the_replay_horizon_is_a_duration_and_the_old_hours_setting_still_counts():
    assert load({}).replay_horizon == 86400
    assert load({"IDEMDASH_REPLAY_HORIZON": "2d"}).replay_horizon == 2 * 86400
    assert load({"IDEMDASH_REPLAY_HORIZON": "90m"}).replay_horizon == 5400
    assert load({"IDEMDASH_REPLAY_HORIZON": "3600"}).replay_horizon == 3600
    assert load({"IDEMDASH_REPLAY_HORIZON_HOURS": "72"}).replay_horizon == 72 * 3600
    # the new name wins over the old one
    assert load({"IDEMDASH_REPLAY_HORIZON": "1h", "IDEMDASH_REPLAY_HORIZON_HOURS": "72"}).replay_horizon == 3600
    for bad in ("0", "soon", "-1h", "24 hours"):
        with pytest.raises(ConfigError, match="IDEMDASH_REPLAY_HORIZON: expected a duration"):
            load({"IDEMDASH_REPLAY_HORIZON": bad})
    with pytest.raises(ConfigError, match="IDEMDASH_REPLAY_HORIZON"):
        load({"IDEMDASH_REPLAY_HORIZON_HOURS": "many"})


# ---------------------------------------------------------------------------
# documentation


def test_every_setting_is_in_the_settings_reference_table():
    """docs/settings.md is generated from SETTINGS (tests/test_docs_reference.py checks it is current); this says
    which setting is missing when it is not."""
    reference = ROOT / "docs" / "settings.md"
    table_rows = [line for line in reference.read_text(encoding="utf-8").splitlines() if line.lstrip().startswith("|")]
    documented = set()
    for line in table_rows:
        documented.update(re.findall(r"\bIDEMDASH_[A-Z0-9_]*[A-Z0-9]", line))
    missing = [s.env for s in SETTINGS if s.env not in documented]
    assert not missing, f"settings missing from docs/settings.md (python -m tools.docs_reference): {missing}"
    legacy = {PREFIX + s.legacy[0] for s in SETTINGS if s.legacy}
    unknown = documented - {s.env for s in SETTINGS} - legacy - {"IDEMDASH_TEST_DATABASE_URL"}
    assert not unknown, f"docs/settings.md documents settings that do not exist: {sorted(unknown)}"


def test_the_profile_setting_names_every_profile():
    """Its help once stopped at `cap` after `dbos` was added; it is now made from PROFILES."""
    words = BY_NAME["PROFILE"].doc
    assert all(f"`{name}`" in words for name in PROFILES), words


def test_the_typed_settings_are_the_declarations():
    """One declaration per setting: the dataclass field is the attribute the code reads, its metadata the docs."""
    assert [s.attribute for s in SETTINGS] == [f.name for f in fields(Settings)]
    assert Settings().purge_batch_size == BY_NAME["PURGE_BATCH_SIZE"].default == 1000
    assert Settings().with_values({"PURGE_BATCH_SIZE": 7}).purge_batch_size == 7
    assert Settings().value("PURGE_BATCH_SIZE") == 1000
    with pytest.raises(ConfigError, match="unknown settings: PURGE_BATCH"):
        Settings().with_values({"PURGE_BATCH": 7})
    with pytest.raises(FrozenInstanceError):
        Settings().purge_batch_size = 7  # type: ignore[misc]  # the point: settings are read, never assigned


def test_which_settings_a_database_may_set_is_said_in_their_declarations():
    assert {s.name for s in SETTINGS if s.per_database} == config.PER_DATABASE
    assert {"DATABASE_URL", "REPLAY_HORIZON", "PURGE_BATCH_SIZE", "PARTITIONS_SCHEDULE"} <= config.PER_DATABASE
    # the process's own: its secret, who may sign in, where it listens
    assert not {"SECRET_KEY", "AUTH", "BIND", "WORKERS", "CONFIG"} & config.PER_DATABASE


def test_every_setting_the_code_names_in_data_is_declared():
    """The settings read with ``Settings.value`` because a table or a role picks them (a purge's retention and
    schedule): a misspelled one would be a KeyError mid-purge, so each is checked here."""
    from idemdash.checks.purging import RETENTION
    from idemdash.jobs.purge_settings import RETENTION_SETTING
    from idemdash.jobs.purges import SCHEDULE_SETTING
    from idemdash.queries.profile_states import retention_setting

    named = {*RETENTION.values(), *SCHEDULE_SETTING.values(), *filter(None, RETENTION_SETTING.values())}
    named |= {retention_setting(role) for role in ("keys", "inbox", "outbox", "archive", "dedup")}
    assert named <= set(BY_NAME), named - set(BY_NAME)
    assert all(Settings().value(name) == BY_NAME[name].default for name in named)


def test_the_code_reads_settings_as_attributes_not_by_name():
    """``settings.default_lease_seconds``, which mypy checks, not ``settings["DEFAULT_LEASE_SECONDS"]`` nor
    ``config.get("PURGE_BATCH_SIZE", 5000)`` (a KeyError at 3 a.m., or a second default that disagrees with the
    declared one). Only core/ builds settings by name; a setting named by data (the retention a profile's table
    names) is read with ``Settings.value``."""
    names = "|".join(BY_NAME)
    by_name = re.compile(
        rf"""(?<!BY_NAME)(?<!config)\[\s*["']({names})["']\s*\]|\.get\(\s*["']({names})["']|db_settings\.({names})\b"""
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for package in ("cli", "dashboard", "jobs", "checks", "workload", "queries", "templates")
        for path in sorted((ROOT / package).rglob("*.*"))
        if path.suffix in (".py", ".html")
        for text in [path.read_text(encoding="utf-8")]
        for m in by_name.finditer(text)
    ]
    assert not offenders, "\n".join(offenders)
