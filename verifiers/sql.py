"""Text-to-SQL execution match: the response's query and the reference run on the same database.

    >>> from referee.verifiers.sql import sql_match
    >>> setup = "CREATE TABLE t(x INT); INSERT INTO t VALUES (1), (2), (2);"
    >>> sql_match("```sql\\nSELECT x FROM t ORDER BY x DESC\\n```", setup, "SELECT x FROM t").score
    1.0
    >>> sql_match("SELECT x FROM t ORDER BY x DESC", setup, "SELECT x FROM t ORDER BY x").score
    0.0

The database is built from ``setup`` (SQL the grader carries) once per worker process and kept;
every check runs on a fresh in-memory copy of it (``sqlite3`` backup), so one query can never see
another's leftovers. After set-up the copy is read-only twice over: ``PRAGMA query_only`` and an
authorizer that allows reading, ``SELECT``, functions and recursive CTEs, and denies everything
else (writes, DDL, ``ATTACH``/``DETACH``, ``PRAGMA``, transactions, ``load_extension``). Each
statement runs under a wall-clock deadline (a progress handler interrupts it), a cap on the rows
and bytes read back, and SQLite's own limits on a string or blob (``zeroblob``, ``printf``
padding), on the SQL text and on the heap. Hostile SQL is a *result* (score 0, outcome
``refused``, ``timeout`` or ``too_large``), never an exception.

Result sets compare as multisets of rows (column order kept, numbers by value: ``1 = 1.0``,
floats rounded to ``float_digits``) unless the reference query has a top-level ``ORDER BY``, when
they compare as lists (``ordered`` overrides). A setup or reference that fails is
``bad_reference`` with ``valid: false``: the data set row is broken, not the response.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sqlite3
import time
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from referee.verifiers.fences import fenced_blocks

__all__ = [
    "SQL_OUTCOMES",
    "SQLLimits",
    "SQLResult",
    "extract_sql",
    "has_order_by",
    "sql_match",
]

SQL_OUTCOMES: Final = (
    "correct",
    "wrong",
    "no_answer",
    "sql_error",
    "refused",
    "timeout",
    "too_large",
    "bad_reference",
)


@dataclass(frozen=True, slots=True)
class SQLLimits:
    timeout_s: float = 2.0
    """Wall-clock deadline of each statement (setup, reference, response) in seconds."""
    max_rows: int = 10_000
    """Rows read back from one query; more is ``too_large``."""
    max_bytes: int = 8 * 1024 * 1024
    """Bytes of values read back from one query; more is ``too_large``."""
    max_value_bytes: int = 1024 * 1024
    """SQLite's ``SQLITE_LIMIT_LENGTH``: the largest string or blob one value may be."""
    max_sql_bytes: int = 1024 * 1024
    """SQLite's ``SQLITE_LIMIT_SQL_LENGTH``: the longest statement."""
    heap_mb: int = 256
    """SQLite's hard heap limit in this process (sort buffers, temp tables, CTE queues)."""


@dataclass(frozen=True, slots=True)
class SQLResult:
    score: float
    outcome: str
    """One of :data:`SQL_OUTCOMES`."""
    query: str | None = None
    """The query read from the response."""
    reason: str | None = None
    ordered: bool | None = None
    rows: int | None = None
    """Rows the response's query returned."""
    reference_rows: int | None = None
    valid: bool = True
    """False when the grader itself (setup, reference) failed: mask the sample."""
    elapsed_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        extra = data.pop("extra")
        return {k: v for k, v in {**data, **extra}.items() if v is not None}


# --- extraction ---------------------------------------------------------------------------

_THINK_END = "</think>"


def extract_sql(response: str) -> str | None:
    """The query of a response: the last fenced ``sql`` block, else the last fenced block, else
    the text after ``</think>`` (or the whole text) when it reads as one statement."""
    text = response.rsplit(_THINK_END, 1)[-1]
    blocks = fenced_blocks(text)
    sql_blocks = [body for lang, body in blocks if lang in ("sql", "sqlite")]
    chosen = sql_blocks[-1] if sql_blocks else (blocks[-1][1] if blocks else None)
    if chosen is None:
        chosen = text
    query = chosen.strip()
    if query.startswith("`"):  # inline: `SELECT 1` or ```sql SELECT 1```
        query = query.strip("`").strip()
        first, _, rest = query.partition(" ")
        if first.lower() in ("sql", "sqlite") and rest:
            query = rest.strip()
    query = query.rstrip(";").strip()
    return query or None


_STRINGS_AND_COMMENTS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.S)


@functools.lru_cache(maxsize=128)
def has_order_by(query: str) -> bool:
    """Whether the query's outermost SELECT has an ORDER BY (not one inside parentheses: a
    sub-query's order does not order the result)."""
    text = _STRINGS_AND_COMMENTS.sub(" ", query)
    depth = 0
    top: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            top.append(ch)
    return re.search(r"\border\s+by\b", "".join(top), re.I) is not None


# --- the database ------------------------------------------------------------------------

_ALLOWED_ACTIONS = frozenset(
    code
    for name in ("SQLITE_SELECT", "SQLITE_READ", "SQLITE_FUNCTION", "SQLITE_RECURSIVE")
    if (code := getattr(sqlite3, name, None)) is not None
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
_SETUP_DENIED = frozenset(
    code
    for name in ("SQLITE_ATTACH", "SQLITE_DETACH", "SQLITE_PRAGMA")
    if (code := getattr(sqlite3, name, None)) is not None
)
_CACHE_SIZE = 16
_CACHE_BYTES = 64 * 1024 * 1024
"""Built databases kept per process: at most this many, of at most this size together (they
count against the process's SQLite heap limit, which every check's copy shares)."""
_built: OrderedDict[str, tuple[sqlite3.Connection, int]] = OrderedDict()
_heap_set = False


class _Refused(Exception):
    pass


def _read_only(action: int, arg1: str | None, arg2: str | None, db: str | None, src: Any) -> int:
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _setup_guard(action: int, arg1: str | None, arg2: str | None, db: str | None, src: Any) -> int:
    if action in _SETUP_DENIED:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


_CONVERSION = re.compile(r"%([-+ 0#,!]*)(\*|\d+)?(?:\.(\*|\d+))?([a-zA-Z%])")
_printf_helper: sqlite3.Connection | None = None


class _PrintfTooBig(ValueError):
    pass


def _guarded_printf(limit: int) -> Any:
    """SQLite's ``printf``/``format`` behind a check of every width and precision: SQLite cuts
    an over-long result but still loops over the whole width (``%.*c`` with 2e9 runs for
    seconds, deaf to the progress handler), so a width above ``limit`` is refused first."""

    def printf(fmt: Any, *args: Any) -> Any:
        global _printf_helper
        if isinstance(fmt, str):
            position = 0
            for m in _CONVERSION.finditer(fmt):
                if m.group(4) == "%":
                    continue
                for part in (m.group(2), m.group(3)):
                    if part == "*":
                        value = args[position] if position < len(args) else 0
                        position += 1
                        try:
                            width = abs(int(value))
                        except (TypeError, ValueError):
                            width = 0
                    else:
                        width = int(part) if part else 0
                    if width > limit:
                        raise _PrintfTooBig(f"printf width {width} over {limit}")
                position += 1
        if _printf_helper is None:
            _printf_helper = sqlite3.connect(":memory:", check_same_thread=False)
        _printf_helper.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
        marks = ", ".join("?" for _ in range(len(args) + 1))
        return _printf_helper.execute(f"SELECT printf({marks})", (fmt, *args)).fetchone()[0]

    return printf


def _limit(conn: sqlite3.Connection, limits: SQLLimits) -> None:
    guarded = _guarded_printf(limits.max_value_bytes)
    for name in ("printf", "format"):
        conn.create_function(name, -1, guarded, deterministic=True)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.max_value_bytes)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, limits.max_sql_bytes)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, 500)
    conn.setlimit(sqlite3.SQLITE_LIMIT_EXPR_DEPTH, 1000)


def _deadline(conn: sqlite3.Connection, timeout_s: float) -> None:
    stop = time.monotonic() + timeout_s
    conn.set_progress_handler(lambda: int(time.monotonic() > stop), 1000)


def _connect(limits: SQLLimits) -> sqlite3.Connection:
    global _heap_set
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    _limit(conn, limits)
    if not _heap_set:  # process-wide; a pool worker holds only these databases
        conn.execute(f"PRAGMA hard_heap_limit = {int(limits.heap_mb) * 1024 * 1024}")
        _heap_set = True
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn


@functools.lru_cache(maxsize=16)
def _digest(setup: str) -> str:
    return hashlib.sha256(setup.encode()).hexdigest()


def _build(setup: str, limits: SQLLimits) -> sqlite3.Connection:
    """The database ``setup`` builds, kept per process (a copy is made for each check)."""
    key = _digest(setup)
    if key in _built:
        _built.move_to_end(key)
        return _built[key][0]
    conn = _connect(limits)
    conn.set_authorizer(_setup_guard)
    _deadline(conn, limits.timeout_s)
    try:
        conn.executescript(setup)
    except BaseException:
        conn.close()
        raise
    conn.set_progress_handler(None, 0)
    conn.set_authorizer(None)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    size = int(pages) * int(conn.execute("PRAGMA page_size").fetchone()[0])
    _built[key] = (conn, size)
    while len(_built) > 1 and (
        len(_built) > _CACHE_SIZE or sum(n for _c, n in _built.values()) > _CACHE_BYTES
    ):
        _built.popitem(last=False)[1][0].close()
    return conn


def _fresh_copy(source: sqlite3.Connection, limits: SQLLimits) -> sqlite3.Connection:
    conn = _connect(limits)
    source.backup(conn)
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(_read_only)
    return conn


# --- running and comparing ---------------------------------------------------------------


@dataclass(slots=True)
class _Run:
    rows: list[tuple[Any, ...]] | None = None
    outcome: str | None = None
    reason: str | None = None


def _size(value: Any) -> int:
    if isinstance(value, str | bytes):
        return len(value)
    return 8


def _normal(value: Any, digits: int) -> Any:
    if isinstance(value, float):
        if value != value:  # NaN never comes from SQLite, but keep the compare total
            return "NaN"
        rounded = round(value, digits)
        return int(rounded) if rounded.is_integer() else rounded
    return value


def _run(conn: sqlite3.Connection, query: str, limits: SQLLimits, digits: int) -> _Run:
    _deadline(conn, limits.timeout_s)
    start = time.monotonic()
    rows: list[tuple[Any, ...]] = []
    size = 0
    try:
        cursor = conn.execute(query)
        while True:
            batch = cursor.fetchmany(256)
            if not batch:
                break
            for row in batch:
                rows.append(tuple(_normal(v, digits) for v in row))
                size += sum(_size(v) for v in row)
            if len(rows) > limits.max_rows:
                return _Run(outcome="too_large", reason=f"more than {limits.max_rows} rows")
            if size > limits.max_bytes:
                return _Run(outcome="too_large", reason=f"more than {limits.max_bytes} bytes")
    except sqlite3.DatabaseError as exc:
        message = str(exc)
        if "interrupted" in message:
            elapsed = time.monotonic() - start
            return _Run(
                outcome="timeout",
                reason=f"stopped after {elapsed:.2f} s (deadline {limits.timeout_s:g} s)",
            )
        if "authoriz" in message or "readonly" in message or "query_only" in message:
            return _Run(outcome="refused", reason=f"refused: {message}")
        if "user-defined function raised exception" in message:
            return _Run(outcome="too_large", reason="a printf width or precision is too large")
        if "too big" in message or "too long" in message or "out of memory" in message:
            return _Run(outcome="too_large", reason=message)
        return _Run(outcome="sql_error", reason=message[:500])
    except (sqlite3.Warning, sqlite3.InterfaceError, ValueError, OverflowError) as exc:
        # two statements at once, a NUL in the text, an integer out of range
        return _Run(outcome="sql_error", reason=str(exc)[:500])
    except MemoryError:
        return _Run(outcome="too_large", reason="out of memory")
    return _Run(rows=rows)


_references: OrderedDict[tuple[str, str, int], _Run] = OrderedDict()


def _reference_rows(
    source: sqlite3.Connection, setup: str, reference: str, limits: SQLLimits, digits: int
) -> _Run:
    """The reference's result, kept per process (the database it reads never changes)."""
    key = (_digest(setup), reference, digits)
    if key in _references:
        _references.move_to_end(key)
        return _references[key]
    conn = _fresh_copy(source, limits)
    try:
        run = _run(conn, reference.strip().rstrip(";"), limits, digits)
    finally:
        conn.close()
    if run.rows is not None:
        _references[key] = run
        while len(_references) > 256:
            _references.popitem(last=False)
    return run


def _equal(got: Sequence[tuple[Any, ...]], want: Sequence[tuple[Any, ...]], ordered: bool) -> bool:
    if ordered:
        return list(got) == list(want)
    return Counter(got) == Counter(want)


def sql_match(
    response: str,
    setup: str,
    reference: str,
    *,
    ordered: bool | None = None,
    float_digits: int = 6,
    extract: bool = True,
    limits: SQLLimits | None = None,
) -> SQLResult:
    """Score one response: 1.0 when its query returns what ``reference`` returns on ``setup``'s
    database, else 0.0 with the outcome that says why."""
    limits = limits or SQLLimits()
    start = time.perf_counter()

    def done(score: float, outcome: str, **kw: Any) -> SQLResult:
        ms = round((time.perf_counter() - start) * 1000, 3)
        return SQLResult(score, outcome, elapsed_ms=ms, **kw)

    try:
        source = _build(setup, limits)
    except sqlite3.DatabaseError as exc:
        why = "timed out" if "interrupted" in str(exc) else str(exc)[:300]
        return done(0.0, "bad_reference", reason=f"the setup SQL failed: {why}", valid=False)
    except (sqlite3.Warning, sqlite3.InterfaceError, ValueError, MemoryError) as exc:
        return done(0.0, "bad_reference", reason=f"the setup SQL failed: {exc}", valid=False)
    ordered = has_order_by(reference) if ordered is None else ordered
    want = _reference_rows(source, setup, reference, limits, float_digits)
    if want.rows is None:
        reason = f"the reference query failed ({want.outcome}): {want.reason}"
        return done(0.0, "bad_reference", reason=reason, valid=False, ordered=ordered)
    query = extract_sql(response) if extract else (response.strip().rstrip(";") or None)
    if query is None:
        return done(0.0, "no_answer", reason="no SQL query in the response")
    conn = _fresh_copy(source, limits)
    try:
        got = _run(conn, query, limits, float_digits)
    finally:
        conn.close()
    if got.rows is None:
        assert got.outcome is not None
        return done(0.0, got.outcome, query=query[:2000], reason=got.reason, ordered=ordered)
    same = _equal(got.rows, want.rows, ordered)
    return done(
        1.0 if same else 0.0,
        "correct" if same else "wrong",
        query=query[:2000],
        reason=None if same else "the result set differs from the reference's",
        ordered=ordered,
        rows=len(got.rows),
        reference_rows=len(want.rows),
    )
