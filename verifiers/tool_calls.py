"""Tool-call rewards: the calls a response makes against the reference calls.

    >>> from referee.verifiers.tool_calls import grade_tool_calls
    >>> reply = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    >>> grade_tool_calls(reply, [{"name": "get_weather", "arguments": {"city": "Paris"}}]).score
    1.0

Calls are read from the shapes models and trainers produce: an OpenAI assistant message (or a
list of them) with ``tool_calls`` (``{"type": "function", "function": {"name", "arguments"}}``,
``arguments`` a JSON string or an object), the legacy ``function_call``, Hermes/Qwen
``<tool_call>{json}</tool_call>`` blocks, a JSON object or list of ``{"name", "arguments"}``
(xLAM's answer shape; ``parameters`` is read as ``arguments``) in the text or a fenced block, or
Python call syntax (``[get_weather(city="Paris"), get_time(tz="CET")]``: BFCL's answers and the
"pythonic" tool calls of Llama 3.2 and later, read with ``ast``, never run; keyword arguments
with literal values only), or Qwen3-Coder's and GLM-4.5's XML inside ``<tool_call>`` blocks
(``tool_call_xml``: values typed by the tools' declarations, as SGLang's parsers type them).

Arguments are equivalent when they are equal JSON values with numbers by value (``1 == 1.0``;
a bool is not a number). With ``tools`` (OpenAI function definitions or xLAM's ``{"name",
"parameters": {arg: {"default": ...}}}``), an argument left out equals its declared default.
Parallel calls are matched in any order (the best assignment) unless ``ordered``.

Scoring (``scoring``):
- ``exact``: 1.0 when every reference call is matched by a call with the same name and
  equivalent arguments and there are no other calls, else 0.0.
- ``partial``: ToolRL's correctness match normalised to [0, 1]: (r_name + r_param + r_value) /
  S_max, where r_name is the Jaccard overlap of the called and the reference tool names, and
  for each reference call matched to a call of the same name r_param is the Jaccard overlap of
  their argument names and r_value counts the reference arguments whose value is equal;
  S_max = 1 + |reference calls| + Σ |reference arguments|.
- ``toolrl``: ToolRL's reward as the paper defines it, R_format + R_correct in [-3, 4], with
  R_format = 1 when the calls could be read and R_correct = 6 · match / S_max - 3.
(Qian et al., "ToolRL: Reward is All Tool Learning Needs", 2025, arXiv:2504.13958.)
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from referee.verifiers.tool_call_reading import ToolCall, parse_tool_calls, read_call
from referee.verifiers.tool_declarations import Declaration, declarations_from_tools, type_ok

__all__ = [
    "TOOL_CALL_OUTCOMES",
    "OneOf",
    "ToolCall",
    "ToolCallResult",
    "defaults_from_tools",
    "grade_tool_calls",
    "parse_tool_calls",
    "values_equal",
]

TOOL_CALL_OUTCOMES: Final = ("correct", "partial", "wrong", "no_call", "bad_reference")
_EXHAUSTIVE = 7  # best assignment by trying every one up to this many calls; greedy beyond
Scoring = Literal["exact", "partial", "toolrl"]


@dataclass(frozen=True, slots=True)
class ToolCallResult:
    score: float
    outcome: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    """The calls read from the response."""
    matches: list[dict[str, Any]] = field(default_factory=list)
    """Per reference call: the call it was matched to and what agreed."""
    format: str | None = None
    """Where the calls were read from: ``openai``, ``hermes``, ``json`` or ``pythonic``."""
    reason: str | None = None
    match_score: float | None = None
    """r_name + r_param + r_value of the best assignment, and its maximum ``s_max``."""
    s_max: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "score": self.score,
            "outcome": self.outcome,
            "format": self.format,
            "calls": self.calls,
            "matches": self.matches,
            "reason": self.reason,
            "match_score": self.match_score,
            "s_max": self.s_max,
        }
        return {k: v for k, v in data.items() if v is not None}


# --- comparing ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OneOf:
    """BFCL's possible answers for one argument; ``""`` among them: it may be left out."""

    values: tuple[Any, ...]
    optional: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "optional", any(v == "" for v in self.values))


_BFCL_IGNORED = re.compile(r"[ ,./\-_*^]")


@functools.lru_cache(maxsize=4096)
def _bfcl_string(s: str) -> str:
    """A string as BFCL's checker compares it: lower case, spaces and ``,./-_*^`` dropped."""
    return _BFCL_IGNORED.sub("", s).lower().replace("'", '"')


def _possible(a: Any, b: Any) -> bool:
    """``a`` equals the possible answer ``b`` as BFCL's checker compares them: strings
    standardised, lists item by item, and a dict of possible values key by key (a key whose
    values hold ``""`` may be missing)."""
    if isinstance(a, str) and isinstance(b, str):
        return _bfcl_string(a) == _bfcl_string(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_possible(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if b and all(isinstance(v, list) for v in b.values()):
            if not a.keys() <= b.keys():
                return False
            return all(
                values_equal(a[k], OneOf(tuple(v))) if k in a else "" in v for k, v in b.items()
            )
        return a.keys() == b.keys() and all(_possible(a[k], b[k]) for k in a)
    return values_equal(a, b)


_PLAIN: Final = frozenset({str, int, bool, type(None)})
"""Types whose values of the same type are equivalent exactly when ``==`` says so."""


def values_equal(a: Any, b: Any) -> bool:
    """JSON values equal, numbers by value (a bool is not a number); against a :class:`OneOf`,
    equal to one of its values."""
    kind = type(a)
    if kind is type(b) and kind in _PLAIN:  # the common case, ahead of the general one
        return bool(a == b)
    if isinstance(b, OneOf):
        return any(_possible(a, v) for v in b.values if v != "")
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0) or a == b
    if isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def defaults_from_tools(tools: Sequence[Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """Declared argument defaults by tool name, from OpenAI or xLAM tool definitions."""
    return {name: d.defaults for name, d in declarations_from_tools(tools).items()}


def _filled(call: ToolCall, want: ToolCall, decl: Declaration | None) -> dict[str, Any]:
    """``call``'s arguments with the declared defaults of those it leaves out, where the
    reference gives a plain value (BFCL's possible answers say with ``""`` when an argument
    may be left out: a default does not stand in there)."""
    if decl is None or not decl.defaults:
        return call.arguments
    fill = {k: v for k, v in decl.defaults.items() if not isinstance(want.arguments.get(k), OneOf)}
    return {**fill, **call.arguments}


@dataclass(frozen=True, slots=True)
class _Pair:
    param: float  # Jaccard overlap of argument names
    values: int  # reference arguments with equal values
    exact: bool
    optional_given: int = 0  # BFCL optional arguments the call gave (they join S_max)
    declaration: tuple[tuple[str, str], ...] = ()  # (argument, what) against the declaration


def _required(arguments: Mapping[str, Any], decl: Declaration | None = None) -> dict[str, Any]:
    """The reference arguments a call must make (not BFCL's optional ones, unless the tool's
    declaration requires them)."""
    needed = decl.required if decl is not None else frozenset()
    return {
        k: v
        for k, v in arguments.items()
        if k in needed or not (isinstance(v, OneOf) and v.optional)
    }


def _answers(want: ToolCall, key: str) -> tuple[Any, ...] | None:
    if key not in want.arguments:
        return None
    value = want.arguments[key]
    return value.values if isinstance(value, OneOf) else (value,)


def _against_declaration(
    got: ToolCall, want: ToolCall, decl: Declaration
) -> tuple[tuple[str, str], ...]:
    """What ``got`` does that its tool's declaration forbids, as (argument, what): a required
    parameter left out, one it does not declare, a value of another type (``type_ok``)."""
    props = decl.properties
    if props is None:
        return ()
    out = [(k, "required, left out") for k in sorted(decl.required) if k not in got.arguments]
    for k, v in got.arguments.items():
        if k not in props:
            out.append((k, "not a parameter the tool declares"))
        elif not type_ok(v, _answers(want, k), props[k]):
            out.append((k, f"{_MISTYPED} {props[k].get('type')!r}"))
    return tuple(out)


_MISTYPED = "not of the declared type"
"""How a value of another type than its declaration's is told (``_pair`` counts it wrong)."""


def _pair(
    got: ToolCall, want: ToolCall, decls: Mapping[str, Declaration], extra_ok: bool = False
) -> _Pair:
    if got.name != want.name:
        return _Pair(0.0, 0, False)
    decl = decls.get(want.name)
    g, full = _filled(got, want, decl), _filled(want, want, decl)
    if extra_ok:  # arguments the reference does not give are not looked at
        g = {k: v for k, v in g.items() if k in full}
    required = _required(full, decl)
    broken = _against_declaration(got, want, decl) if decl is not None else ()
    mistyped = {k for k, what in broken if what.startswith(_MISTYPED)}
    # a BFCL optional argument counts only when the call gives it, and then like any other
    w = {k: v for k, v in full.items() if k in g or k in required}
    union = g.keys() | w.keys()
    param = len(g.keys() & w.keys()) / len(union) if union else 1.0
    values = sum(1 for k in w if k in g and k not in mistyped and values_equal(g[k], w[k]))
    exact = g.keys() == w.keys() and values == len(w) and not broken
    return _Pair(param, values, exact, len(w) - len(required), broken)


def _names_overlap(got: Sequence[ToolCall], want: Sequence[ToolCall]) -> float:
    """ToolRL's r_name: the Jaccard overlap of the two multisets of tool names (plain counting:
    ``Counter``'s ``&`` and ``|`` cost more than the rest of a one-call check)."""
    counts: dict[str, list[int]] = {}
    for c in got:
        counts.setdefault(c.name, [0, 0])[0] += 1
    for c in want:
        counts.setdefault(c.name, [0, 0])[1] += 1
    both = sum(min(g, w) for g, w in counts.values())
    return both / sum(max(g, w) for g, w in counts.values())


def _assign(
    got: list[ToolCall],
    want: list[ToolCall],
    pairs: list[list[_Pair]],
    ordered: bool,
) -> list[int | None]:
    """For each reference call, the index of the call matched to it (or None)."""
    value = [[p.param + p.values + (1e-6 if p.exact else 0.0) for p in row] for row in pairs]
    n, m = len(want), len(got)
    if ordered:
        return [j if j < m else None for j in range(n)]
    if n == 1 and m == 1:
        return [0]
    if min(n, m) <= _EXHAUSTIVE and max(n, m) <= _EXHAUSTIVE + 2:
        best: tuple[float, list[int | None]] = (-1.0, [None] * n)
        if n <= m:
            for perm in itertools.permutations(range(m), n):
                total = sum(value[i][perm[i]] for i in range(n))
                if total > best[0]:
                    best = (total, list(perm))
        else:
            for perm in itertools.permutations(range(n), m):
                total = sum(value[perm[j]][j] for j in range(m))
                if total > best[0]:
                    chosen: list[int | None] = [None] * n
                    for j in range(m):
                        chosen[perm[j]] = j
                    best = (total, chosen)
        return best[1]
    chosen = [None] * n
    taken: set[int] = set()
    order = sorted(((value[i][j], i, j) for i in range(n) for j in range(m)), key=lambda t: -t[0])
    for _v, i, j in order:
        if chosen[i] is None and j not in taken:
            chosen[i] = j
            taken.add(j)
    return chosen


def _reference_call(entry: Any) -> ToolCall | None:
    allowed = entry.get("allowed") if isinstance(entry, Mapping) else None
    if isinstance(allowed, Mapping) and isinstance(entry.get("name"), str) and entry["name"]:
        if all(isinstance(v, list) for v in allowed.values()):
            return ToolCall(entry["name"], {k: OneOf(tuple(v)) for k, v in allowed.items()})
        return None
    return read_call(entry)


def _reference(reference: Sequence[Any]) -> list[ToolCall] | None:
    calls = [_reference_call(r) for r in reference]
    return None if any(c is None for c in calls) else [c for c in calls if c is not None]


def grade_tool_calls(
    response: str,
    reference: Sequence[Mapping[str, Any]],
    *,
    scoring: Scoring = "exact",
    ordered: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    extra_arguments: Literal["wrong", "ignored"] = "wrong",
) -> ToolCallResult:
    """Score the response's tool calls against ``reference`` (``[{"name", "arguments"}]``; an
    empty list means "no call should be made"). ``extra_arguments="ignored"``: a call's
    arguments the reference does not give are not compared (NeMo Gym's xlam_fc checks only the
    expected ones); ``"wrong"``: a call that gives one does not match."""
    want = _reference(reference)
    if want is None:
        return ToolCallResult(0.0, "bad_reference", reason="a reference call has no name")
    decls = declarations_from_tools(tools)
    got, fmt = parse_tool_calls(response, decls)
    calls = [{"name": c.name, "arguments": c.arguments} for c in got]
    required = [len(_required(_filled(w, w, decls.get(w.name)), decls.get(w.name))) for w in want]
    s_max = 1 + len(want) + sum(required)
    if not want:  # the right answer is not to call anything
        ok = not got
        score = 1.0 if ok else 0.0
        # ToolRL gives no correctness term when no call is due: only the format's 1 or 0
        outcome = "correct" if ok else "wrong"
        return ToolCallResult(score, outcome, calls, [], fmt, None if ok else "no call expected")
    if not got:
        score = -3.0 if scoring == "toolrl" else 0.0
        return ToolCallResult(score, "no_call", [], [], None, "no tool call found in the response")
    extra_ok = extra_arguments == "ignored"
    pairs = [[_pair(g, w, decls, extra_ok) for g in got] for w in want]
    chosen = _assign(got, want, pairs, ordered)
    r_name = _names_overlap(got, want)
    r_param = r_value = 0.0
    matches: list[dict[str, Any]] = []
    all_exact = len(got) == len(want)
    for i, j in enumerate(chosen):
        pair = pairs[i][j] if j is not None else _Pair(0.0, 0, False)
        r_param += pair.param
        r_value += pair.values
        s_max += pair.optional_given
        all_exact = all_exact and pair.exact
        matches.append(
            {
                "reference": want[i].name,
                "call": j,
                "name_match": j is not None and got[j].name == want[i].name,
                "arguments_equal": pair.exact,
                "values_equal": pair.values,
                "arguments": required[i] + pair.optional_given,
                **({"declaration": dict(pair.declaration)} if pair.declaration else {}),
            }
        )
    match = r_name + r_param + r_value
    if scoring == "exact":
        score = 1.0 if all_exact else 0.0
    elif scoring == "partial":
        score = match / s_max
    else:
        score = 1.0 + 6.0 * match / s_max - 3.0
    outcome = "correct" if all_exact else ("partial" if match > 0 else "wrong")
    reason = None if all_exact else "the calls differ from the reference (see matches)"
    return ToolCallResult(score, outcome, calls, matches, fmt, reason, match, float(s_max))
