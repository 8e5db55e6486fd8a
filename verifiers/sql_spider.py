"""Spider's execution match, as its official test-suite evaluation computes it.

Spider's ``exec_eval.eval_exec_match`` (taoyds/test-suite-sql-eval, the script Spider's
leaderboard reports execution accuracy with), at its defaults:

- both queries are rewritten first: ``> =``, ``< =``, ``! =`` closed up, ``YEAR(CURDATE())``
  read as 2020, and every ``DISTINCT`` keyword dropped (``--keep_distinct`` is off by default:
  ``SELECT DISTINCT name`` and ``SELECT name`` are one query there);
- the rows compare in order when the gold query's text holds ``order by`` anywhere (lower-cased,
  one space: a sub-query's counts), as multisets otherwise;
- the columns may come in any order: the results match when some order of the predicted
  query's columns makes them equal (the same number of rows and of columns, each row's values
  as a bag first, then the column orders that can fit).

Values compare as Python compares them (``1 == 1.0``); referee's rows carry floats rounded to
the grader's ``float_digits`` (Spider compares them unrounded).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["spider_equal", "spider_order_matters", "spider_query"]

_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.I)
_QUOTED = re.compile(
    r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|`[^`]*`?|\[[^\]]*\]?|--[^\n]*|/\*.*?(?:\*/|\Z)", re.S
)
_DISTINCT = re.compile(r"(?<![\w$])distinct(?![\w$])", re.I)
_MAX_STEPS = 2_000_000
"""Rows compared in all while column orders are tried; a result that needs more (dozens of
interchangeable columns: no real query's) is not matched."""


def spider_query(query: str) -> str:
    """The query as Spider's evaluation runs it (``postprocess``, ``replace_cur_year``,
    ``remove_distinct``): ``DISTINCT`` dropped outside strings, quoted names and comments."""
    query = query.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")
    query = _CUR_YEAR.sub("2020", query)
    out: list[str] = []
    last = 0
    for m in _QUOTED.finditer(query):
        out.append(_DISTINCT.sub("", query[last : m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_DISTINCT.sub("", query[last:]))
    return "".join(out)


def spider_order_matters(gold: str) -> bool:
    """Spider's rule: rows compare in order when the gold query's text says ``order by``."""
    return "order by" in gold.lower()


def _unordered(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(sorted(row, key=lambda x: str(x) + str(type(x))))


def _column_orders(
    gold: Sequence[tuple[Any, ...]], pred: Sequence[tuple[Any, ...]], n: int
) -> Iterator[tuple[int, ...]]:
    """Orders of the predicted columns that can fit: column ``i`` of the gold result may be
    predicted column ``j`` only when every value of ``j`` is among those of ``i`` (Spider
    narrows so on 20 sampled rows, for more than 3 columns; all rows narrow further and drop
    only orders that cannot fit). At most ``_MAX_STEPS`` steps of the search in all."""
    if n <= 3:
        yield from itertools.product(range(n), repeat=n)
        return
    gold_values = [{row[i] for row in gold} for i in range(n)]
    pred_values = [{row[j] for row in pred} for j in range(n)]
    allowed = [[j for j in range(n) if pred_values[j] <= gold_values[i]] for i in range(n)]
    steps = 0
    stack: list[tuple[tuple[int, ...], int]] = [((), 0)]  # (order so far, next choice)
    while stack and steps < _MAX_STEPS:
        steps += 1
        prefix, k = stack.pop()
        i = len(prefix)
        if i == n:
            yield prefix
            continue
        if k < len(allowed[i]):
            stack.append((prefix, k + 1))
            j = allowed[i][k]
            if j not in prefix:
                stack.append(((*prefix, j), 0))


def spider_equal(
    gold: Sequence[tuple[Any, ...]], pred: Sequence[tuple[Any, ...]], order_matters: bool
) -> bool:
    """Spider's ``result_eq``: the same rows (in order, or as multisets) under some order of
    the predicted query's columns."""
    if not gold and not pred:
        return True
    if len(gold) != len(pred):
        return False
    n = len(gold[0])
    if len(pred[0]) != n:
        return False
    bags_gold = [_unordered(r) for r in gold]
    bags_pred = [_unordered(r) for r in pred]
    if order_matters and bags_gold != bags_pred:
        return False
    if not order_matters and set(bags_gold) != set(bags_pred):
        return False
    want = list(gold) if order_matters else Counter(gold)
    steps = 0
    for order in _column_orders(gold, pred, n):
        if len(set(order)) != n:
            continue
        steps += len(pred)
        if steps > _MAX_STEPS:
            return False
        moved = list(pred) if n == 1 else [tuple(row[j] for j in order) for row in pred]
        if (moved == want) if order_matters else (Counter(moved) == want):
            return True
    return False
