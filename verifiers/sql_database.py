"""The SQLite databases the ``sql`` grader's queries run on, and running one query there.

``_build`` makes the database a grader's ``setup`` builds (under a deadline, with ``ATTACH``,
``DETACH`` and ``PRAGMA`` denied), keeps it per process (at most 16 of them, 64 MiB together),
and ``_fresh_copy`` gives each check an in-memory copy of it that is read-only twice over
(``PRAGMA query_only`` and an authorizer that allows only reading, ``SELECT``, functions and
recursive CTEs). Every connection carries :class:`SQLLimits` (SQLite's limits on a value, the SQL
text and the heap; ``printf``/``format`` behind a check of every width), and ``_run`` runs one
query under a wall-clock deadline and caps on the rows and bytes read back, answering its rows or
the outcome that says why there are none (``timeout``, ``refused``, ``too_large``,
``sql_error``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sqlite3
import threading
import time
import urllib.parse
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["SQLLimits"]


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


def _connect(limits: SQLLimits, target: str = ":memory:") -> sqlite3.Connection:
    global _heap_set
    uri = target != ":memory:"
    conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, uri=uri)
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


_scratch = threading.local()
"""Each thread's connection that checks run on (``.conn``), with the database it holds a copy
of (``.source``), the limits it carries (``.limits``) and its change count after the copy
(``.changes``): kept, and overwritten with a copy of the check's database when it holds another
one (a backup replaces the whole database: about 3 µs where a new connection with its limits and
pragmas cost 60, and SQLite then reads the schema again and prepares the statement anew, 20 µs
more)."""


def _fresh_copy(source: sqlite3.Connection, limits: SQLLimits) -> sqlite3.Connection:
    """A read-only connection holding a copy of ``source`` as it was built: this thread's kept
    one, as it is when it already holds a copy of ``source`` that nothing changed (no row
    changed, no transaction open: the copy is read-only twice over, so this only guards the
    guards), else overwritten; a new one when there is none or the copy into it fails. Nothing
    a check runs there can outlive the next copy: its authorizer allows no temporary table,
    trigger, view, function or attached database, only reading the main one."""
    conn: sqlite3.Connection | None = getattr(_scratch, "conn", None)
    if conn is not None:
        if (
            _scratch.source is source
            and _scratch.limits == limits
            and conn.total_changes == _scratch.changes
            and not conn.in_transaction
        ):
            return conn
        try:
            source.backup(conn)
        except sqlite3.Error:  # a statement still open, a page size it cannot take
            conn.close()
            conn = _scratch.conn = None
        else:
            if _scratch.limits != limits:
                _limit(conn, limits)
            _kept(conn, source, limits)
            return conn
    conn = _connect(limits)
    source.backup(conn)
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(_read_only)
    _kept(conn, source, limits)
    return conn


def _kept(conn: sqlite3.Connection, source: sqlite3.Connection, limits: SQLLimits) -> None:
    _scratch.conn, _scratch.source, _scratch.limits = conn, source, limits
    _scratch.changes = conn.total_changes


_files = threading.local()
"""Each thread's read-only connections to SQLite files (``.conns``), by file and limits."""
_FILE_CONNECTIONS = 16


def _file_key(path: str) -> str:
    """The file as it is now: its path, size and modification time (a file replaced on disk is
    another database: its reference result is not reused)."""
    st = os.stat(path)
    return f"file:{path}:{st.st_size}:{st.st_mtime_ns}"


def _file_connection(path: str, key: str, limits: SQLLimits) -> sqlite3.Connection:
    """This thread's connection to the SQLite file at ``path``, opened read-only (``mode=ro``:
    the file itself cannot be written through it) and read-only twice over as a copy is
    (``query_only``, the authorizer); kept while nothing changed through it (a file of BIRD's
    may be gigabytes: it is read where it lies, not copied)."""
    conns: OrderedDict[tuple[str, SQLLimits], sqlite3.Connection] | None = getattr(
        _files, "conns", None
    )
    if conns is None:
        conns = _files.conns = OrderedDict()
    conn = conns.get((key, limits))
    if conn is not None:
        if conn.total_changes == 0 and not conn.in_transaction:
            conns.move_to_end((key, limits))
            return conn
        conns.pop((key, limits)).close()
    conn = _connect(limits, "file:" + urllib.parse.quote(path) + "?mode=ro")
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # is it a database?
    except sqlite3.Error:
        conn.close()
        raise
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(_read_only)
    conns[(key, limits)] = conn
    while len(conns) > _FILE_CONNECTIONS:
        conns.popitem(last=False)[1].close()
    return conn


@dataclass(slots=True)
class _Run:
    rows: list[tuple[Any, ...]] | None = None
    outcome: str | None = None
    reason: str | None = None


_FLOAT = float
_SIZED = (str, bytes)  # what sqlite3 gives back: None, int, float, str, bytes


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
    cursor: sqlite3.Cursor | None = None
    try:
        cursor = conn.execute(query)
        while True:
            batch = cursor.fetchmany(256)
            if not batch:
                break
            for row in batch:
                if _FLOAT in map(type, row):  # most rows have none: kept as they are
                    row = tuple(_normal(v, digits) for v in row)
                rows.append(row)
                size += sum(len(v) if type(v) in _SIZED else 8 for v in row)
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
    finally:
        if cursor is not None:  # a query stopped early holds its statement open
            cursor.close()
    return _Run(rows=rows)
