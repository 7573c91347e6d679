"""The named-SQL loader, and the rule that SQL lives in queries/*.sql only."""

from __future__ import annotations

import ast
import re
import string
import types
from pathlib import Path

import pytest
from psycopg import sql

from idemdash import queries
from idemdash.core.settings import Settings
from idemdash.queries import QUERIES, Query, Tables, _parse, load_all, statement, workload

ROOT = Path(__file__).resolve().parent.parent
TABLE_FIELDS = {"schema", "keys", "inbox", "outbox"}
SQL_FILES = sorted((ROOT / "queries").glob("*.sql"))
WORKLOAD_SQL_FILES = sorted((ROOT / "queries" / "workload").glob("*.sql"))
# every package but queries/, where SQL must not be
CODE_PACKAGES = ("core", "jobs", "checks", "workload", "dashboard", "cli")


def python_files(*dirs: str) -> list[Path]:
    found = []
    for name in dirs:
        found.extend(p for p in sorted((ROOT / name).rglob("*.py")) if "__pycache__" not in p.parts)
    return found


def format_fields(text: str) -> list[str | None]:
    return [field for _, field, _, _ in string.Formatter().parse(text) if field is not None]


# ---------------------------------------------------------------------------
# parsing


def test_every_sql_file_is_loaded_and_every_block_is_complete():
    assert SQL_FILES, "no queries/*.sql found"
    assert {q.source for q in QUERIES.values()} == {p.name for p in SQL_FILES}
    for name, query in QUERIES.items():
        assert query.name == name
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name)
        assert query.description and query.description == query.description.strip(), name
        assert not query.description.startswith("-"), name
        assert query.text and query.text == query.text.strip(), name
        # The body never swallows the next block's header (a header without description would).
        assert not re.search(r"^-- [a-z][a-z0-9_]* --$", query.text, re.MULTILINE), name


def test_the_workload_statements_are_loaded_apart_from_the_products():
    """The demo's, the simulator's and the benchmarks' SQL: its own registry, no name shared with the product's."""
    assert WORKLOAD_SQL_FILES and {q.source for q in workload.QUERIES.values()} == {p.name for p in WORKLOAD_SQL_FILES}
    assert not set(workload.QUERIES) & set(QUERIES)
    assert "backfill_keys_and_outbox" in workload.QUERIES and "backfill_keys_and_outbox" not in QUERIES


def test_block_count_matches_the_headers_in_the_files():
    headers = []
    for path in SQL_FILES:
        headers += re.findall(r"^-- ([a-z][a-z0-9_]*) --$", path.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(headers) == len(set(headers)), "a query name is defined twice"
    assert sorted(headers) == sorted(QUERIES)


def test_nothing_before_the_first_header():
    for path in SQL_FILES:
        text = path.read_text(encoding="utf-8")
        first = re.search(r"^-- [a-z][a-z0-9_]* --$", text, re.MULTILINE)
        assert first is not None, path.name
        assert text[: first.start()].strip() == "", f"{path.name}: text before the first block is ignored"


def test_parse_reads_name_description_and_body():
    text = "-- first_one --\n-- The first.\nSELECT 1\n\n-- second --\n-- The second one.\nSELECT {keys}\nFROM x\n"
    parsed = _parse("t.sql", text)
    assert parsed == {
        "first_one": Query("first_one", "The first.", "SELECT 1", "t.sql"),
        "second": Query("second", "The second one.", "SELECT {keys}\nFROM x", "t.sql"),
    }


def test_parse_rejects_a_duplicate_name():
    text = "-- dup --\n-- One.\nSELECT 1\n\n-- dup --\n-- Two.\nSELECT 2\n"
    with pytest.raises(ValueError, match=r"t\.sql.*'dup' defined twice"):
        _parse("t.sql", text)


@pytest.mark.parametrize(
    "text",
    [
        "-- empty --\n-- Nothing here.\n",
        "-- empty --\n-- Nothing here.\n\n   \n-- next --\n-- Fine.\nSELECT 1\n",
    ],
)
def test_parse_rejects_an_empty_body(text):
    with pytest.raises(ValueError, match=r"t\.sql.*'empty' has no statement"):
        _parse("t.sql", text)


def test_parse_rejects_a_header_without_description():
    text = "-- a --\n-- The a.\nSELECT 1\n\n-- b --\nSELECT 2\n"
    with pytest.raises(ValueError, match="'b' needs a one-line"):
        _parse("t.sql", text)


def test_parse_rejects_text_before_the_first_header():
    with pytest.raises(ValueError, match="before the first"):
        _parse("t.sql", "SELECT 0;\n-- a --\n-- The a.\nSELECT 1\n")


def test_load_all_rejects_a_name_in_two_files(monkeypatch, tmp_path):
    (tmp_path / "a.sql").write_text("-- same --\n-- A.\nSELECT 1\n", encoding="utf-8")
    (tmp_path / "b.sql").write_text("-- same --\n-- B.\nSELECT 2\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("-- ignored --\n-- Not SQL.\nSELECT 3\n", encoding="utf-8")
    monkeypatch.setattr(queries, "resources", types.SimpleNamespace(files=lambda package: tmp_path))
    with pytest.raises(ValueError, match=r"'same' is in both a\.sql and b\.sql"):
        load_all()

    (tmp_path / "b.sql").write_text("-- other --\n-- B.\nSELECT 2\n", encoding="utf-8")
    assert sorted(load_all()) == ["other", "same"]


# ---------------------------------------------------------------------------
# identifiers


def test_statement_without_tables_is_the_text_verbatim():
    assert statement("get_database_now").as_string() == QUERIES["get_database_now"].text


def test_statement_quotes_the_configured_names():
    rendered = statement("count_processing_keys", Tables(schema='We"ird', keys="My Keys")).as_string()
    assert 'FROM "We""ird"."My Keys"' in rendered
    assert "{keys}" not in rendered


def test_every_placeholder_block_formats_with_tables():
    """Blocks over the application tables format with Tables(); literal braces are escaped."""
    sources = "\n".join(p.read_text(encoding="utf-8") for p in python_files("queries"))
    # every name a caller in queries/ passes: a keyword (name=...) or a string ("name"), read once
    passed = set(re.findall(r"\b(\w+)\s*=", sources)) | set(re.findall(r"[\"'](\w+)[\"']", sources))
    formatted = 0
    for name, query in sorted(QUERIES.items()):
        fields = format_fields(query.text)
        assert all(fields), f"{name}: positional {{}} placeholder (write a literal brace as {{{{ }}}})"
        if not fields:
            # Sent verbatim when called without tables: an escaped brace would reach the server doubled.
            assert "{{" not in query.text and "}}" not in query.text, f"{name}: '{{{{' in a block without placeholders"
            continue
        # a field naming another block is that shared fragment, filled in by the loader (with the fields it names)
        fields += [f for field in fields if field in QUERIES for f in format_fields(QUERIES[field].text)]
        extras = {field: sql.Literal("x") for field in fields if field not in TABLE_FIELDS and field not in QUERIES}
        # profile_states.sql's, profile_indexes.sql's, custom_states.sql's, library_purges.sql's and
        # library_action_rules.sql's fields are a profile's tables and columns, filled in from the profile
        # (tests/test_profile_states.py runs every state, tests/test_profile_indexes.py every index,
        # tests/test_custom_shapes.py the custom states, tests/test_library_purge_properties.py the purges,
        # tests/test_library_actions.py every library action, tests/test_journey_profiles.py every journey read)
        for extra in (
            extras
            if query.source
            not in (
                "profile_states.sql",
                "profile_indexes.sql",
                "custom_states.sql",
                "library_purges.sql",
                "library_action_rules.sql",
                "profile_facts.sql",
                "journey_profiles.sql",
            )
            else {}
        ):
            assert extra in passed, f"{name}: placeholder {{{extra}}} is not passed by any caller in queries/"
        rendered = statement(name, Tables(), **extras).as_string()
        assert not re.search(r"\{(schema|keys|inbox|outbox)\}", rendered), name
        formatted += 1
    assert formatted >= 4  # the reference schema blocks at least


def test_a_field_naming_a_block_is_filled_with_that_block_rendered_alike(monkeypatch):
    monkeypatch.setitem(QUERIES, "frag_inner", Query("frag_inner", "Inner.", "{keys}.a = %(v)s", "t.sql"))
    monkeypatch.setitem(QUERIES, "frag_outer", Query("frag_outer", "Outer.", "({frag_inner} AND b)", "t.sql"))
    monkeypatch.setitem(
        QUERIES, "frag_use", Query("frag_use", "Use.", "SELECT 1 FROM {keys} WHERE {frag_outer}", "t.sql")
    )
    assert (
        statement("frag_use", Tables("s", "k")).as_string() == 'SELECT 1 FROM "s"."k" WHERE ("s"."k".a = %(v)s AND b)'
    )
    # identifiers passed reach the fragments too (a partition in place of the table)
    assert (
        statement("frag_use", keys=sql.Identifier("p")).as_string() == 'SELECT 1 FROM "p" WHERE ("p".a = %(v)s AND b)'
    )
    # a caller's own value for the field wins over the block
    assert statement("frag_use", Tables(), frag_outer=sql.SQL("true")).as_string().endswith("WHERE true")


def test_each_purge_rule_is_written_once():
    """The eligibility of each table lives in its fragment alone; the statements and the index name it."""
    texts = {name: query.text for name, query in QUERIES.items()}
    for rule in (
        "status IN ('succeeded', 'failed_final')",
        "AND a.action LIKE 'reclassify%%'",
        "processed_at < now() - make_interval(days => %(retention_days)s)",
        "published_at < now() - make_interval(days => %(retention_days)s)",
    ):
        assert len([name for name, text in texts.items() if rule in text]) == 1, rule
    assert "{terminal_keys}" in texts["index_keys_due"] and "{terminal_keys}" in texts["expired_keys"]
    assert "{expired_keys}" in texts["purgeable_keys"]
    rendered = statement("index_keys_due", Tables(), index_name=sql.Identifier("i")).as_string()
    assert rendered.endswith("WHERE status IN ('succeeded', 'failed_final')")


def test_table_identifiers():
    ids = Tables("s", "k", "i", "o").identifiers()
    assert {name: ident.as_string() for name, ident in ids.items()} == {
        "schema": '"s"',
        "keys": '"s"."k"',
        "inbox": '"s"."i"',
        "outbox": '"s"."o"',
    }
    config = Settings(app_schema="a", keys_table="b", inbox_table="c", outbox_table="d")
    assert Tables.from_config(config) == Tables("a", "b", "c", "d")


# ---------------------------------------------------------------------------
# SQL stays in queries/


STATEMENT_CALL = re.compile(r"""\bstatement\(\s*(['"])([^'"]+)\1""")


def test_every_statement_name_used_in_python_exists():
    used: dict[str, list[str]] = {}
    for path in python_files("queries", *CODE_PACKAGES):
        for match in STATEMENT_CALL.finditer(path.read_text(encoding="utf-8")):
            used.setdefault(match.group(2), []).append(str(path.relative_to(ROOT)))
    assert {"claim_key", "migration_lock", "get_database_now"} <= set(used), "the scan found too little"

    def known(name: str, where: list[str]) -> bool:
        registry = workload.QUERIES if all(w.startswith("queries/workload/") for w in where) else QUERIES
        return name in registry

    missing = {name: where for name, where in used.items() if not known(name, where)}
    assert not missing, f"statement() names with no SQL block: {missing}"


QUOTED_NAME = re.compile(r"""(['"])([a-z][a-z0-9_]*)\1""")
# names built at run time: statement(f"fragment_set_{to}"), or every block whose name starts with "index_"
NAME_PREFIX = re.compile(r"""statement\(\s*f(['"])([a-z][a-z0-9_]*)\{|startswith\(\s*(['"])([a-z][a-z0-9_]*)\3\)""")


def test_every_sql_block_has_a_caller():
    """A block no Python code names (literally, or by a prefix it builds the name from) is dead SQL."""
    sources = "\n".join(p.read_text(encoding="utf-8") for p in python_files("queries", "benchmarks", *CODE_PACKAGES))
    literals = {m.group(2) for m in QUOTED_NAME.finditer(sources)}
    prefixes = {m.group(2) or m.group(4) for m in NAME_PREFIX.finditer(sources)}
    assert {"fragment_set_", "index_"} <= prefixes, "the scan found too little"
    blocks = set(QUERIES) | set(workload.QUERIES)
    # a fragment another block names as a {field} is filled in by the loader: it runs inside that block
    composed = {
        field
        for query in [*QUERIES.values(), *workload.QUERIES.values()]
        for field in format_fields(query.text)
        if field in blocks
    }
    unused = sorted(
        name
        for name in blocks - composed
        if name not in literals and not any(name.startswith(prefix) for prefix in prefixes)
    )
    assert not unused, f"SQL blocks no code runs: {unused}"


SQL_IN_STRING = re.compile(
    r"\b(SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|CREATE\s+(TABLE|INDEX|SCHEMA)|"
    r"ALTER\s+TABLE|DROP\s+TABLE|TRUNCATE)\s"
)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def sql_like_strings(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    docstrings = _docstring_nodes(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and SQL_IN_STRING.search(node.value)
    ]


def test_the_static_check_finds_sql():
    source = (
        '"""Module doc: SELECT things from here."""\n'
        'def f():\n    """SELECT in a docstring is fine."""\n'
        '    a = "SELECT 1"\n    b = f"DELETE FROM {x} WHERE y"\n    c = "select lowercase prose"\n'
    )
    assert [line for line, _ in sql_like_strings(source)] == [4, 5]


@pytest.mark.system  # over a second: parses every Python file of the tree
def test_no_sql_outside_queries():
    offenders = []
    files = python_files(*CODE_PACKAGES)
    assert files
    for path in files:
        for line, text in sql_like_strings(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {text[:60]!r}")
    assert not offenders, "SQL belongs in queries/*.sql:\n" + "\n".join(offenders)


def test_a_kept_statement_is_the_one_its_tables_render(database_url):
    """statement() keeps what it rendered for a name and its tables: the same tables get the same statement, other
    tables (another database's names) their own, and a statement given identifiers of its own is rendered anew."""
    import psycopg

    reference, other = Tables(), Tables(schema="shop", keys="requests", inbox="seen", outbox="events")
    with psycopg.connect(database_url) as conn:
        for name in ("count_processing_keys", "get_outbox_backlog"):
            for tables in (reference, other, reference):
                kept = statement(name, tables)
                assert kept is statement(name, tables)
                assert kept.as_string(conn) == queries.render(QUERIES[name], tables).as_string(conn)
            assert statement(name, reference).as_string(conn) != statement(name, other).as_string(conn)
            assert '"shop".' in statement(name, other).as_string(conn)
        own = statement("count_processing_keys", reference, keys=sql.Identifier("elsewhere"))
        assert '"elsewhere"' in own.as_string(conn)
        assert own is not statement("count_processing_keys", reference, keys=sql.Identifier("elsewhere"))
