"""The ``sql`` grader's execution match, and hostile SQL stopped by its guards (in-process).

Each hostile statement must end as a result (``refused``, ``timeout``, ``too_large`` or
``sql_error``), never as an exception or a change to the database; the file system is checked
for what ATTACH / VACUUM INTO would have written.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from referee.verifiers import sql_database
from referee.verifiers.sql import SQLLimits, extract_sql, has_order_by, sql_match

SETUP = """
CREATE TABLE singer(id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INT, net REAL);
INSERT INTO singer VALUES
  (1, 'Joe Sharp', 'Netherlands', 52, 1.5),
  (2, 'Timbaland', 'United States', 32, 2.25),
  (3, 'Justin Brown', 'France', 29, 0.1),
  (4, 'Rose White', 'France', 41, 3.0),
  (5, 'John Nizinik', 'France', 43, 0.3);
CREATE TABLE concert(id INT, singer_id INT, year INT);
INSERT INTO concert VALUES (1, 2, 2014), (2, 2, 2015), (3, 4, 2014), (4, 5, 2015);
CREATE TABLE big(x INT);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000)
INSERT INTO big SELECT i FROM c;
"""

# (response, reference, expected score): shapes of model outputs on Spider-style questions
CASES: list[tuple[str, str, float]] = [
    ("```sql\nSELECT count(*) FROM singer\n```", "SELECT count(*) FROM singer", 1.0),
    ("SELECT COUNT(id) FROM singer;", "SELECT count(*) FROM singer", 1.0),
    ("<think>count rows</think>\n```sql\nSELECT count(*) FROM singer\n```", "SELECT 5", 1.0),
    ("```sql\nSELECT count(*) FROM singer WHERE age > 40\n```", "SELECT count(*) FROM singer", 0.0),
    # multiset: order does not matter without ORDER BY in the reference ...
    (
        "SELECT name FROM singer WHERE country = 'France' ORDER BY name DESC",
        "SELECT name FROM singer WHERE country = 'France'",
        1.0,
    ),
    # ... but duplicates do
    (
        "SELECT DISTINCT country FROM singer",
        "SELECT country FROM singer",
        0.0,
    ),
    # the reference orders: so must the response
    (
        "SELECT name FROM singer ORDER BY age",
        "SELECT name FROM singer ORDER BY age DESC",
        0.0,
    ),
    (
        "SELECT name FROM singer ORDER BY age DESC",
        "SELECT name FROM singer ORDER BY age DESC",
        1.0,
    ),
    # an ORDER BY inside a sub-query does not order the result
    (
        "SELECT name FROM singer WHERE id IN (SELECT singer_id FROM concert)",
        "SELECT name FROM singer WHERE id IN (SELECT singer_id FROM concert ORDER BY year)",
        1.0,
    ),
    # numbers by value, floats rounded
    ("SELECT sum(net) FROM singer", "SELECT 7.15", 1.0),
    ("SELECT 2.0 * 3", "SELECT 6", 1.0),
    # column order counts
    ("SELECT age, name FROM singer", "SELECT name, age FROM singer", 0.0),
    # joins
    (
        "```sql\nSELECT s.name, count(*) FROM singer s JOIN concert c ON c.singer_id = s.id "
        "GROUP BY s.name\n```",
        "SELECT T2.name, count(*) FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.id "
        "GROUP BY T1.singer_id",
        1.0,
    ),
    ("SELEC name FROM singer", "SELECT name FROM singer", 0.0),
    ("SELECT name FROM singers", "SELECT name FROM singer", 0.0),
    ("I don't know.", "SELECT name FROM singer", 0.0),
]


@pytest.mark.parametrize(("response", "reference", "expected"), CASES)
def test_execution_match(response: str, reference: str, expected: float) -> None:
    result = sql_match(response, SETUP, reference)
    assert result.score == expected, result
    assert result.valid


def test_outcomes_say_why() -> None:
    assert sql_match("SELEC 1", SETUP, "SELECT 1").outcome == "sql_error"
    assert sql_match("", SETUP, "SELECT 1").outcome == "no_answer"
    wrong = sql_match("SELECT 2", SETUP, "SELECT 1")
    assert (wrong.outcome, wrong.rows, wrong.reference_rows) == ("wrong", 1, 1)


def test_a_broken_row_is_invalid_not_a_zero() -> None:
    bad_setup = sql_match("SELECT 1", "CREATE TABLE (", "SELECT 1")
    assert (bad_setup.outcome, bad_setup.valid) == ("bad_reference", False)
    bad_ref = sql_match("SELECT 1", SETUP, "SELECT nope FROM singer")
    assert (bad_ref.outcome, bad_ref.valid) == ("bad_reference", False)
    assert "reference" in (bad_ref.reason or "")


def test_ordered_override() -> None:
    response, reference = "SELECT id FROM singer ORDER BY id DESC", "SELECT id FROM singer"
    assert sql_match(response, SETUP, reference).score == 1.0
    assert sql_match(response, SETUP, reference, ordered=True).score == 0.0


def test_compare_as_sets_as_birds_evaluation() -> None:
    """``compare="set"``: BIRD's ``set(predicted) == set(gold)``: duplicates and order aside
    (unless ``ordered`` says otherwise); the default counts duplicates and keeps ORDER BY's
    order."""
    setup = "CREATE TABLE t(x INT, y TEXT); INSERT INTO t VALUES (1,'a'),(1,'a'),(2,'b');"
    cases = [
        ("SELECT x, y FROM t", "SELECT DISTINCT x, y FROM t", 0.0, 1.0),
        ("SELECT x, y FROM t ORDER BY x", "SELECT x, y FROM t ORDER BY x DESC", 0.0, 1.0),
        ("SELECT y, x FROM t", "SELECT x, y FROM t", 0.0, 0.0),  # columns keep their order
        ("SELECT x FROM t WHERE x = 2", "SELECT x FROM t", 0.0, 0.0),
    ]
    for response, reference, multiset, as_set in cases:
        assert sql_match(response, setup, reference).score == multiset, response
        assert sql_match(response, setup, reference, compare="set").score == as_set, response
    ordered = sql_match(
        "SELECT x FROM t ORDER BY x",
        setup,
        "SELECT DISTINCT x FROM t ORDER BY x DESC",
        compare="set",
        ordered=True,
    )
    assert ordered.score == 0.0 and ordered.ordered is True


def test_extraction() -> None:
    assert extract_sql("```sql\nSELECT 1;\n```\nor\n```sql\nSELECT 2;\n```") == "SELECT 2"
    assert extract_sql("```\nSELECT 3\n```") == "SELECT 3"
    assert extract_sql("<think>```sql\nSELECT 9\n```</think>SELECT 4;") == "SELECT 4"
    assert extract_sql("```sql SELECT 5; ```") == "SELECT 5"
    assert extract_sql("`SELECT 6`") == "SELECT 6"
    assert extract_sql("   ```sql\nSELECT 7\n   ```\n") == "SELECT 7"
    # R1-style answers: the last <answer> block, fenced or not, closed or not
    assert extract_sql("<think>SELECT 0</think>\n<answer>SELECT 8;</answer>") == "SELECT 8"
    assert (
        extract_sql("<answer>SELECT 0</answer> then <answer>\n```sql\nSELECT 9\n```\n</answer>")
        == "SELECT 9"
    )
    assert extract_sql("```sql\nSELECT 0\n```\n<answer>SELECT 10") == "SELECT 10"
    assert extract_sql("<answer></answer>") is None
    assert has_order_by("SELECT a FROM t ORDER BY a")
    assert not has_order_by("SELECT a FROM (SELECT a FROM t ORDER BY a)")
    assert not has_order_by("SELECT 'order by' FROM t -- order by\n")


def test_unclosed_fences_cost_linear_time() -> None:
    """Thousands of fences that never close (a regex with a lazy body re-scans the rest of the
    text from each): read in one pass, and what is left is the query."""
    for text in ("```x\n" * 50_000, "```" * 100_000, "~~~\n" * 50_000):
        result = sql_match(text, SETUP, "SELECT 1")
        assert result.outcome in ("sql_error", "no_answer"), result.outcome


def test_each_check_sees_a_fresh_copy() -> None:
    # a write is refused, and nothing a response does is seen by the next one
    assert sql_match("DELETE FROM singer", SETUP, "SELECT 1").outcome == "refused"
    assert sql_match("SELECT count(*) FROM singer", SETUP, "SELECT 5").score == 1.0


def test_a_kept_copy_that_was_changed_is_copied_again() -> None:
    """The thread's copy is kept between checks of one database only while nothing changed
    it: a write that got past both guards (done here by lifting them by hand) is undone by the
    next check's fresh copy."""
    assert sql_match("SELECT count(*) FROM singer", SETUP, "SELECT 5").score == 1.0
    kept = sql_database._scratch.conn
    kept.set_authorizer(None)
    kept.execute("PRAGMA query_only = OFF")
    kept.execute("DELETE FROM singer")
    assert kept.execute("SELECT count(*) FROM singer").fetchone() == (0,)
    kept.execute("PRAGMA query_only = ON")
    kept.set_authorizer(sql_database._read_only)
    assert sql_match("SELECT count(*) FROM singer", SETUP, "SELECT 5").score == 1.0
    kept.set_authorizer(None)
    kept.execute("BEGIN")  # a transaction left open: copied again too
    kept.execute("SELECT count(*) FROM singer").fetchone()
    kept.set_authorizer(sql_database._read_only)
    assert sql_match("SELECT count(*) FROM singer", SETUP, "SELECT 5").score == 1.0
    assert not sql_database._scratch.conn.in_transaction


LIMITS = SQLLimits(timeout_s=0.5, max_rows=1000)
TABLE_BOMB = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c)"


def test_checks_on_databases_in_turn_each_see_their_own() -> None:
    """Checks run on one kept connection per thread, overwritten with each check's database:
    in turn with another database, and after a query stopped with its statement still open,
    each check sees its own database whole."""
    other = "CREATE TABLE singer(id INT); INSERT INTO singer VALUES (1), (2);"
    for _ in range(3):
        assert sql_match("SELECT count(*) FROM singer", SETUP, "SELECT 5").score == 1.0
        stopped = sql_match(f"{TABLE_BOMB} SELECT i FROM c", other, "SELECT 1", limits=LIMITS)
        assert stopped.outcome in ("too_large", "timeout")
        assert sql_match("SELECT count(*) FROM singer", other, "SELECT 2").score == 1.0
        assert sql_match("DELETE FROM singer", other, "SELECT 1").outcome == "refused"
        assert sql_match("SELECT count(*) FROM singer", SETUP, "SELECT 5").score == 1.0


def test_threads_checking_at_once_each_see_their_own_database() -> None:
    other = "CREATE TABLE singer(id INT); INSERT INTO singer VALUES (1), (2);"
    cases = [(SETUP, "SELECT 5"), (other, "SELECT 2")] * 100
    with ThreadPoolExecutor(4) as pool:
        scores = list(pool.map(lambda c: sql_match("SELECT count(*) FROM singer", *c).score, cases))
    assert scores == [1.0] * len(cases)


# (name, statement, the outcomes that stop it; a row or size cap may be beaten to it by the
# deadline on a loaded machine, and either stops it)
HOSTILE: list[tuple[str, str, set[str]]] = [
    ("recursive CTE bomb", f"{TABLE_BOMB} SELECT count(*) FROM c", {"timeout"}),
    ("recursive CTE rows", f"{TABLE_BOMB} SELECT i FROM c", {"too_large", "timeout"}),
    (
        "string doubling CTE",
        "WITH RECURSIVE c(i, s) AS (SELECT 1, 'x' UNION ALL SELECT i + 1, s || s FROM c) "
        "SELECT max(length(s)) FROM c",
        {"too_large", "timeout"},
    ),
    ("huge cross join", "SELECT count(*) FROM big a, big b, big c", {"timeout"}),
    ("cross join rows", "SELECT a.x, b.x FROM big a, big b", {"too_large", "timeout"}),
    ("sorting a cross join", "SELECT a.x FROM big a, big b ORDER BY random()", {"timeout"}),
    ("ATTACH", "ATTACH DATABASE '{tmp}/attached.db' AS x", {"refused"}),
    ("ATTACH memory", "ATTACH ':memory:' AS m", {"refused"}),
    ("DETACH", "DETACH DATABASE main", {"refused"}),
    ("load_extension", "SELECT load_extension('/lib/x86_64-linux-gnu/libc.so.6')", {"refused"}),
    ("INSERT", "INSERT INTO singer VALUES (9, 'x', 'y', 1, 1.0)", {"refused"}),
    ("UPDATE", "UPDATE singer SET age = 0", {"refused"}),
    ("DELETE", "DELETE FROM singer", {"refused"}),
    ("DROP", "DROP TABLE singer", {"refused"}),
    ("CREATE TABLE", "CREATE TABLE t2(x)", {"refused"}),
    ("CREATE TEMP", "CREATE TEMP TABLE t2 AS SELECT * FROM singer", {"refused"}),
    ("CREATE VIEW", "CREATE TEMP VIEW v AS SELECT 1", {"refused"}),
    ("PRAGMA write", "PRAGMA query_only = 0", {"refused"}),
    ("PRAGMA read", "PRAGMA table_info(singer)", {"refused"}),
    ("pragma function", "SELECT * FROM pragma_table_info('singer')", {"refused"}),
    ("VACUUM INTO", "VACUUM INTO '{tmp}/copy.db'", {"refused"}),
    ("BEGIN", "BEGIN IMMEDIATE", {"refused"}),
    ("two statements", "SELECT 1; DROP TABLE singer", {"sql_error"}),
    ("zeroblob", "SELECT zeroblob(2000000000)", {"too_large"}),
    ("randomblob", "SELECT randomblob(1000000000)", {"too_large"}),
    ("printf width", "SELECT printf('%.*c', 2000000000, 'x')", {"too_large"}),
    ("printf literal width", "SELECT printf('%1999999999d', 1)", {"too_large"}),
    ("format width", "SELECT format('%.*c', 2000000000, 'x')", {"too_large"}),
    ("many large rows", "SELECT printf('%.*c', 900000, 'x') FROM big", {"too_large", "timeout"}),
    ("replace growth", "SELECT replace(printf('%.*c', 900000, 'a'), 'a', 'aaaa')", {"too_large"}),
    (
        "group_concat growth",
        f"{TABLE_BOMB} SELECT length(group_concat(printf('%.*c', 100000, 'a'))) FROM c",
        {"too_large", "timeout"},
    ),
    ("NUL byte", "SELECT 1\x00; DROP TABLE singer", {"sql_error"}),
]


@pytest.mark.slow  # about 2 s: each statement runs to its cap
@pytest.mark.parametrize(("name", "statement", "stopped"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_sql_is_stopped(
    name: str, statement: str, stopped: set[str], tmp_path: Path
) -> None:
    result = sql_match(statement.format(tmp=tmp_path), SETUP, "SELECT 1", limits=LIMITS)
    assert result.score == 0.0
    assert result.outcome in stopped, (name, result)
    assert result.valid  # the response's fault, not the grader's
    assert list(tmp_path.iterdir()) == []  # nothing attached or written
    # the database is unharmed for the next check
    assert sql_match("SELECT count(*) FROM singer", SETUP, "SELECT 5").score == 1.0


def test_hostile_setup_is_refused_too(tmp_path: Path) -> None:
    for setup in (
        f"ATTACH DATABASE '{tmp_path}/x.db' AS x",
        "SELECT load_extension('libc.so.6')",
        f"{TABLE_BOMB} SELECT count(*) FROM c",
    ):
        result = sql_match("SELECT 1", setup, "SELECT 1", limits=LIMITS)
        assert (result.outcome, result.valid) == ("bad_reference", False), setup
    assert list(tmp_path.iterdir()) == []


def test_a_rows_reference_fills_the_grader() -> None:
    """A trainer's reference column (TRL's `solution`, veRL's ground_truth) becomes the query."""
    from referee.client.grader_specs import fill_grader

    filled = fill_grader({"type": "sql", "setup": SETUP}, "SELECT count(*) FROM singer")
    assert filled["reference"] == "SELECT count(*) FROM singer"
    kept = fill_grader({"type": "sql", "setup": SETUP, "reference": "SELECT 1"}, "SELECT 2")
    assert kept["reference"] == "SELECT 1"


# --- a SQLite file as the database (Spider's and BIRD's database/<db_id>/<db_id>.sqlite) ------


def _write_database(path: Path, setup: str = SETUP) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(setup)
    conn.commit()
    conn.close()
    return path


def test_a_database_file_is_checked_where_it_lies_and_never_written(tmp_path: Path) -> None:
    path = _write_database(tmp_path / "concert_singer.sqlite")
    before = path.read_bytes()
    on_file = functools.partial(sql_match, setup=None, database=str(path))
    assert on_file("SELECT count(*) FROM singer", reference="SELECT 5").score == 1.0
    assert on_file("SELECT count(*) FROM singer WHERE 0", reference="SELECT 5").score == 0.0
    for hostile in ("DELETE FROM singer", "DROP TABLE singer", "PRAGMA query_only = 0",
                    "CREATE TEMP TABLE x(a)", f"ATTACH '{tmp_path / 'x.db'}' AS x"):  # fmt: skip
        assert on_file(hostile, reference="SELECT 1").outcome == "refused", hostile
    assert on_file("SELECT count(*) FROM singer", reference="SELECT 5").score == 1.0
    assert path.read_bytes() == before
    assert not (tmp_path / "x.db").exists()


def test_a_database_file_replaced_on_disk_is_read_again(tmp_path: Path) -> None:
    path = _write_database(tmp_path / "db.sqlite")
    reference = "SELECT count(*) FROM singer"
    assert sql_match("SELECT 5", None, reference, database=str(path)).score == 1.0
    path.unlink()
    _write_database(path, "CREATE TABLE singer(id INT); INSERT INTO singer VALUES (1);")
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert sql_match("SELECT 1", None, reference, database=str(path)).score == 1.0


def test_a_database_file_that_is_missing_or_not_a_database_is_the_rows_fault(
    tmp_path: Path,
) -> None:
    (tmp_path / "text.sqlite").write_text("not a database at all " * 100)
    for path in (tmp_path / "missing.sqlite", tmp_path / "text.sqlite"):
        result = sql_match("SELECT 1", None, "SELECT 1", database=str(path))
        assert (result.outcome, result.valid) == ("bad_reference", False), path
        assert "database file cannot be read" in (result.reason or "")


def test_fence_extraction_reads_the_last_sql_fence_only() -> None:
    """``extract="fence"`` (NeMo Gym's bird_sql): the last ```sql block (any case, inline too,
    a bold header dropped), never ```sqlite, an untagged fence or bare text; a flood of
    openings is read in one pass."""
    from referee.verifiers.sql import extract_sql

    def fence(text: str) -> str | None:
        return extract_sql(text, fence_only=True)

    assert fence("```sql\nSELECT 1;\n```\n```SQL\nSELECT 2\n```") == "SELECT 2"
    assert fence("So: ```sql SELECT 3``` done") == "SELECT 3"
    assert fence("```sql\n**Query**\nSELECT 4\n```") == "SELECT 4"
    for none in ("SELECT 1", "```\nSELECT 1\n```", "```sqlite\nSELECT 1\n```", "```sql\n```"):
        assert fence(none) is None, none
    assert fence("```sql " * 200_000) is None
    assert sql_match("SELECT 1", SETUP, "SELECT 1", extract="fence").outcome == "no_answer"
    assert sql_match("```sql\nSELECT 1\n```", SETUP, "SELECT 1", extract="fence").score == 1.0
