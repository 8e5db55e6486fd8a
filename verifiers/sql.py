"""Text-to-SQL execution match: the response's query and the reference run on the same database.

    >>> from referee.verifiers.sql import sql_match
    >>> setup = "CREATE TABLE t(x INT); INSERT INTO t VALUES (1), (2), (2);"
    >>> sql_match("```sql\\nSELECT x FROM t ORDER BY x DESC\\n```", setup, "SELECT x FROM t").score
    1.0
    >>> sql_match("SELECT x FROM t ORDER BY x DESC", setup, "SELECT x FROM t ORDER BY x").score
    0.0

The database is built from ``setup`` (SQL the grader carries) once per worker process and kept;
every check runs on an in-memory copy of it (``sqlite3`` backup), made again whenever the
thread's kept copy holds another database or anything changed it, so one query can never see
another's leftovers. After set-up the copy is read-only twice over: ``PRAGMA query_only`` and an
authorizer that allows reading, ``SELECT``, functions and recursive CTEs, and denies everything
else (writes, DDL, ``ATTACH``/``DETACH``, ``PRAGMA``, transactions, ``load_extension``). Each
statement runs under a wall-clock deadline (a progress handler interrupts it), a cap on the rows
and bytes read back, and SQLite's own limits on a string or blob (``zeroblob``, ``printf``
padding), on the SQL text and on the heap. Hostile SQL is a *result* (score 0, outcome
``refused``, ``timeout`` or ``too_large``), never an exception.

Result sets compare as multisets of rows (column order kept, numbers by value: ``1 = 1.0``,
floats rounded to ``float_digits``) unless the reference query has a top-level ``ORDER BY``, when
they compare as lists (``ordered`` overrides); ``compare="set"`` compares them as sets in any
order, as BIRD's evaluation does; ``compare="spider"`` as Spider's test-suite evaluation does
(``sql_spider.py``: DISTINCT dropped from both queries, the columns in any order, the rows in
order when the reference's text says ``order by``). A setup or reference that fails is
``bad_reference`` with ``valid: false``: the data set row is broken, not the response.

The databases, their limits and running one query on them are in ``sql_database.py``
(:class:`SQLLimits` re-exported here); the extraction, the reference's cached result, the
comparison and :func:`sql_match` are here.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Final

from referee.verifiers.fences import fenced_blocks
from referee.verifiers.sql_database import (
    SQLLimits,
    _build,
    _digest,
    _file_connection,
    _file_key,
    _fresh_copy,
    _Run,
    _run,
)
from referee.verifiers.sql_spider import spider_equal, spider_order_matters, spider_query
from referee.verifiers.text_scan import after_thinking

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
        # the fields by name, not dataclasses.asdict (its deep copy was a fifth of a check)
        data = {name: getattr(self, name) for name in _RESULT_FIELDS}
        return {k: v for k, v in {**data, **self.extra}.items() if v is not None}


_RESULT_FIELDS: Final = tuple(f.name for f in fields(SQLResult) if f.name != "extra")


# --- extraction ---------------------------------------------------------------------------


def extract_sql(response: str, fence_only: bool = False) -> str | None:
    """The query of a response: the last fenced ``sql`` block, else the last fenced block, else
    the text after ``</think>`` (or the whole text) when it reads as one statement; within the
    last ``<answer>`` block where the response has one (R1-style answers). ``fence_only``: the
    last fenced ``sql`` block alone, or none (as NeMo Gym's bird_sql server reads a query)."""
    text = after_thinking(response)
    if fence_only:
        return _last_sql_fence(text)
    opened = text.rfind("<answer>")
    if opened >= 0:
        inside = text[opened + len("<answer>") :]
        closed = inside.find("</answer>")
        text = (inside if closed < 0 else inside[:closed]).strip()
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


_WORD_CHAR = re.compile(r"\w")
_LETTER = re.compile(r"[A-Za-z]")
_BOLD_HEAD = re.compile(r"^\*\*.*\*\*")


def _last_sql_fence(text: str) -> str | None:
    """The last ```sql block's body (the tag in any case, not ```sqlite; inline or on its own
    lines, to the next ```; one with no letter skipped), a leading **bold** header dropped.
    One pass: each opening finds its closing by one search forward."""
    lower, found, at = text.lower(), None, 0
    while (start := lower.find("```sql", at)) >= 0:
        body_at = start + 6
        if body_at < len(text) and _WORD_CHAR.match(text, body_at):
            at = body_at  # ```sqlite, ```sql_x: another tag
            continue
        end = text.find("```", body_at)
        if end < 0:
            break
        body = text[body_at:end]
        if _LETTER.search(body):
            found = body
        at = end + 3
    if found is None:
        return None
    query = _BOLD_HEAD.sub("", found.strip()).strip().rstrip(";").strip()
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


# --- the reference and the comparison ---------------------------------------------------

_references: OrderedDict[tuple[str, str, int], _Run] = OrderedDict()


def _reference_rows(
    database: str,
    check_on: Callable[[], sqlite3.Connection],
    reference: str,
    limits: SQLLimits,
    digits: int,
) -> _Run:
    """The reference's result, kept per process for the database (``database``: its key; the
    database it reads never changes)."""
    key = (database, reference, digits)
    if key in _references:
        _references.move_to_end(key)
        return _references[key]
    run = _run(check_on(), reference.strip().rstrip(";"), limits, digits)
    if run.rows is not None:
        _references[key] = run
        while len(_references) > 256:
            _references.popitem(last=False)
    return run


def _equal(
    got: Sequence[tuple[Any, ...]], want: Sequence[tuple[Any, ...]], ordered: bool, as_sets: bool
) -> bool:
    if ordered:
        return list(got) == list(want)
    if as_sets:
        return set(got) == set(want)
    return Counter(got) == Counter(want)


def sql_match(
    response: str,
    setup: str | None,
    reference: str,
    *,
    ordered: bool | None = None,
    float_digits: int = 6,
    extract: bool | str = True,
    limits: SQLLimits | None = None,
    database: str | None = None,
    compare: str = "multiset",
) -> SQLResult:
    """Score one response: 1.0 when its query returns what ``reference`` returns on ``setup``'s
    database (or on the SQLite file at the path ``database``, opened read-only), else 0.0 with
    the outcome that says why. ``compare="set"``: duplicate rows aside and, unless ``ordered``,
    in any order (BIRD's evaluation); ``compare="spider"``: as Spider's test-suite evaluation
    matches them (``sql_spider``: DISTINCT dropped, the columns in any order, the rows in order
    when the reference says ``order by`` anywhere)."""
    limits = limits or SQLLimits()
    start = time.perf_counter()

    def done(score: float, outcome: str, **kw: Any) -> SQLResult:
        ms = round((time.perf_counter() - start) * 1000, 3)
        return SQLResult(score, outcome, elapsed_ms=ms, **kw)

    check_on: Callable[[], sqlite3.Connection]
    if database is not None:
        try:
            key = _file_key(database)
            _file_connection(database, key, limits)
        except (OSError, sqlite3.Error) as exc:
            reason = f"the database file cannot be read: {str(exc)[:300]}"
            return done(0.0, "bad_reference", reason=reason, valid=False)
        check_on = functools.partial(_file_connection, database, key, limits)
    else:
        try:
            source = _build(setup or "", limits)
        except sqlite3.DatabaseError as exc:
            why = "timed out" if "interrupted" in str(exc) else str(exc)[:300]
            return done(0.0, "bad_reference", reason=f"the setup SQL failed: {why}", valid=False)
        except (sqlite3.Warning, sqlite3.InterfaceError, ValueError, MemoryError) as exc:
            return done(0.0, "bad_reference", reason=f"the setup SQL failed: {exc}", valid=False)
        key = _digest(setup or "")
        check_on = functools.partial(_fresh_copy, source, limits)
    as_sets, spider = compare == "set", compare == "spider"
    if spider:  # Spider's evaluation runs both queries rewritten (DISTINCT dropped...)
        reference = spider_query(reference)
    if ordered is None:
        if spider:
            ordered = spider_order_matters(reference)
        else:
            ordered = False if as_sets else has_order_by(reference)
    want = _reference_rows(key, check_on, reference, limits, float_digits)
    if want.rows is None:
        reason = f"the reference query failed ({want.outcome}): {want.reason}"
        return done(0.0, "bad_reference", reason=reason, valid=False, ordered=ordered)
    if extract in (True, "auto", "fence"):
        query = extract_sql(response, fence_only=extract == "fence")
    else:
        query = response.strip().rstrip(";") or None
    if query is None:
        return done(0.0, "no_answer", reason="no SQL query in the response")
    got = _run(check_on(), spider_query(query) if spider else query, limits, float_digits)
    if got.rows is None:
        assert got.outcome is not None
        return done(0.0, got.outcome, query=query[:2000], reason=got.reason, ordered=ordered)
    if spider:
        same = spider_equal(want.rows, got.rows, ordered)
    else:
        same = _equal(got.rows, want.rows, ordered, as_sets)
    return done(
        1.0 if same else 0.0,
        "correct" if same else "wrong",
        query=query[:2000],
        reason=None if same else "the result set differs from the reference's",
        ordered=ordered,
        rows=len(got.rows),
        reference_rows=len(want.rows),
    )
