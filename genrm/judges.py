"""Model judges: rubric (explicit and implicit), pointwise GenRM, pairwise with both orders.

Each judge takes a batch, builds every prompt first and sends them to the backend in one call
(the backend batches or runs them concurrently), then parses each verdict. A response that fails
the hacking guards scores 0 without reaching the judge; a verdict that cannot be read gives that
item ``score=None`` with the reason (a trainer skips it), never an exception.

* rubric, explicit: each criterion judged met or not, score = Σ w·met / Σ|w| over the criteria
  (a pitfall has a negative weight: meeting it costs), clipped to [0, 1]; implicit: one 1-10
  rating normalised to [0, 1].
* pointwise: a yes/no verdict (or a 1-10 score) after a rationale; with ``label_probs`` the score
  is P(Yes) / (P(Yes) + P(No)) from the judge's own first-token probabilities; ``samples`` k
  verdicts averaged (``mean``) or majority-voted (``majority``).
* pairwise: every pair of a group judged as (A, B) and (B, A), so position bias cancels; ties
  count half; the score of a response is its win rate or its Bradley-Terry strength.

``structured=True`` asks the backend to constrain the judge's output to the packaged templates'
shape, a rationale (without ``[``) ending in the verdict line (:data:`VERDICT_REGEX`), with
structured outputs: enforced by the ``vllm`` backend and by OpenAI-compatible servers that take
``structured_outputs`` (the ``openai`` backend falls back to a plain request where a server
refuses it); the ``transformers`` backend ignores it. Leave it off with custom templates that ask
for another verdict format.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal

from referee.genrm.backend import Completion, LLMBackend, SamplingParams, StructuredOutput
from referee.genrm.guards import fence, screen
from referee.genrm.templates import load_template, reference_block
from referee.genrm.verdicts import VerdictError, parse_choice, parse_score, parse_yes_no

__all__ = [
    "VERDICT_REGEX",
    "Criterion",
    "JudgeItem",
    "JudgeResult",
    "bradley_terry",
    "fill_template",
    "judge_pairwise",
    "judge_pointwise",
    "judge_rubric",
]


_RATIONALE = r"[^\[]*"
VERDICT_REGEX = {
    "yes_no": _RATIONALE + r"\[RESULT\] (Yes|No)",
    "score": _RATIONALE + r"\[RESULT\] ([1-9]|10)",
    "choice": _RATIONALE + r"\[RESULT\] (A|B|tie)",
}
"""What ``structured=True`` constrains a judge's output to, by verdict kind."""


def _constraint(kind: str, structured: bool) -> StructuredOutput | None:
    return StructuredOutput("regex", VERDICT_REGEX[kind]) if structured else None


@dataclass(frozen=True, slots=True)
class JudgeItem:
    prompt: str
    response: str
    reference: str | None = None


@dataclass(frozen=True, slots=True)
class Criterion:
    text: str
    weight: float = 1.0


@dataclass(slots=True)
class JudgeResult:
    score: float | None
    outcome: str  # judged, guard, parse_error
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "reason": self.reason, **self.details}


def fill_template(template: str, item: JudgeItem, **extra: str) -> str:
    return template.format(
        prompt=fence(item.prompt),
        response=fence(item.response),
        reference_block=reference_block(item.reference),
        **extra,
    )


def _screened(items: Sequence[JudgeItem]) -> tuple[list[int], dict[int, JudgeResult]]:
    live, out = [], {}
    for i, item in enumerate(items):
        why = screen(item.response)
        if why is None:
            live.append(i)
        else:
            out[i] = JudgeResult(0.0, "guard", why)
    return live, out


def _yes_probability(c: Completion) -> float | None:
    lp = c.label_logprobs or {}
    yes, no = lp.get("Yes", -math.inf), lp.get("No", -math.inf)
    if yes == -math.inf and no == -math.inf:
        return None
    top = max(yes, no)
    py, pn = math.exp(yes - top), math.exp(no - top)
    return py / (py + pn)


async def judge_pointwise(
    backend: LLMBackend,
    items: Sequence[JudgeItem],
    *,
    mode: Literal["binary", "score"] = "binary",
    samples: int = 1,
    aggregate: Literal["mean", "majority"] = "mean",
    label_probs: bool = False,
    max_tokens: int = 512,
    temperature: float | None = None,
    template_dir: str | None = None,
    structured: bool = False,
) -> list[JudgeResult]:
    live, out = _screened(items)
    template = load_template(f"pointwise_{mode}", template_dir)
    temp = temperature if temperature is not None else (0.7 if samples > 1 else 0.0)
    params = SamplingParams(
        max_tokens=1 if label_probs else max_tokens,
        temperature=temp,
        n=1 if label_probs else samples,
        label_tokens=("Yes", "No") if label_probs and mode == "binary" else (),
        structured=_constraint(
            "yes_no" if mode == "binary" else "score", structured and not label_probs
        ),
    )
    prompts = [fill_template(template, items[i]) for i in live]
    if label_probs and mode == "binary":
        prompts = [p + "\n[RESULT]" for p in prompts]
    completions = await backend.generate(prompts, params) if prompts else []
    for i, comps in zip(live, completions, strict=True):
        out[i] = _aggregate_pointwise(comps, mode, aggregate, label_probs)
    return [out[i] for i in range(len(items))]


def _aggregate_pointwise(
    comps: list[Completion], mode: str, aggregate: str, label_probs: bool
) -> JudgeResult:
    if label_probs and mode == "binary":
        p = _yes_probability(comps[0])
        if p is None:
            return JudgeResult(None, "parse_error", "the backend gave no Yes/No probabilities")
        return JudgeResult(p, "judged", None, {"method": "label_probs", "p_yes": p})
    values: list[float] = []
    errors: list[str] = []
    for c in comps:
        try:
            if mode == "binary":
                values.append(1.0 if parse_yes_no(c.full_text) else 0.0)
            else:
                values.append((parse_score(c.full_text, 1, 10) - 1) / 9)
        except VerdictError as exc:
            errors.append(str(exc))
    if not values:
        return JudgeResult(
            None, "parse_error", errors[0] if errors else "no verdict", {"samples": len(comps)}
        )
    if aggregate == "majority":
        score = 1.0 if sum(v >= 0.5 for v in values) * 2 > len(values) else 0.0
    else:
        score = sum(values) / len(values)
    return JudgeResult(
        score, "judged", None, {"method": "verdict", "verdicts": values, "unparsed": len(errors)}
    )


async def judge_rubric(
    backend: LLMBackend,
    items: Sequence[JudgeItem],
    criteria: Sequence[Criterion],
    *,
    mode: Literal["explicit", "implicit"] = "explicit",
    max_tokens: int = 256,
    template_dir: str | None = None,
    structured: bool = False,
) -> list[JudgeResult]:
    if not criteria:
        raise ValueError("a rubric needs at least one criterion")
    total = sum(abs(c.weight) for c in criteria)
    if total == 0:
        raise ValueError("a rubric's weights cannot all be zero")
    live, out = _screened(items)
    kind = "score" if mode == "implicit" else "yes_no"
    params = SamplingParams(max_tokens=max_tokens, structured=_constraint(kind, structured))
    if mode == "implicit":
        listing = "\n".join(
            f"{k + 1}. {'PITFALL: ' if c.weight < 0 else ''}{c.text} (weight {abs(c.weight):g})"
            for k, c in enumerate(criteria)
        )
        template = load_template("rubric_implicit", template_dir)
        prompts = [fill_template(template, items[i], criteria=listing) for i in live]
        completions = await backend.generate(prompts, params) if prompts else []
        for i, comps in zip(live, completions, strict=True):
            try:
                rating = parse_score(comps[0].full_text, 1, 10)
                out[i] = JudgeResult((rating - 1) / 9, "judged", None, {"rating": rating})
            except VerdictError as exc:
                out[i] = JudgeResult(None, "parse_error", str(exc))
        return [out[i] for i in range(len(items))]
    template = load_template("rubric_criterion", template_dir)
    prompts = [fill_template(template, items[i], criterion=c.text) for i in live for c in criteria]
    completions = await backend.generate(prompts, params) if prompts else []
    for n, i in enumerate(live):
        met: list[bool | None] = []
        for k in range(len(criteria)):
            try:
                met.append(parse_yes_no(completions[n * len(criteria) + k][0].full_text))
            except VerdictError:
                met.append(None)
        out[i] = rubric_score(criteria, met)
    return [out[i] for i in range(len(items))]


def rubric_score(criteria: Sequence[Criterion], met: Sequence[bool | None]) -> JudgeResult:
    """Σ w·met / Σ|w| over the judged criteria (None: unreadable verdict), clipped to [0, 1]."""
    judged = [(c, m) for c, m in zip(criteria, met, strict=True) if m is not None]
    details = {
        "criteria": [
            {"text": c.text[:200], "weight": c.weight, "met": m}
            for c, m in zip(criteria, met, strict=True)
        ]
    }
    if len(judged) < len(criteria):
        return JudgeResult(
            None,
            "parse_error",
            f"{len(criteria) - len(judged)} criteria without a readable verdict",
            details,
        )
    total = sum(abs(c.weight) for c in criteria)
    raw = sum(c.weight for c, m in judged if m) / total
    return JudgeResult(min(1.0, max(0.0, raw)), "judged", None, {**details, "raw": raw})


def bradley_terry(
    n: int, outcomes: Sequence[tuple[int, int, float]], iters: int = 200
) -> list[float]:
    """Strengths from (i, j, result) with result 1 (i won), 0 (j won), 0.5 (tie); MM algorithm
    with a small prior (one tie against a virtual average player) so no strength is 0 or ∞."""
    p = [1.0] * n
    for _ in range(iters):
        new = []
        for i in range(n):
            wins, denom = 0.5, 1.0 / (p[i] + 1.0)
            for a, b, r in outcomes:
                if i in (a, b):
                    j = b if a == i else a
                    wins += r if a == i else 1.0 - r
                    denom += 1.0 / (p[i] + p[j])
            new.append(wins / denom)
        scale = math.exp(sum(math.log(x) for x in new) / n)
        p = [x / scale for x in new]
    return p


async def judge_pairwise(
    backend: LLMBackend,
    prompt: str,
    responses: Sequence[str],
    *,
    reference: str | None = None,
    score: Literal["win_rate", "bradley_terry"] = "win_rate",
    max_tokens: int = 512,
    template_dir: str | None = None,
    structured: bool = False,
) -> list[JudgeResult]:
    """Scores for the G responses to one prompt from all pairs judged in both orders."""
    items = [JudgeItem(prompt, r, reference) for r in responses]
    live, out = _screened(items)
    template = load_template("pairwise", template_dir)
    pairs = list(combinations(live, 2))
    prompts = []
    for a, b in pairs:
        for first, second in ((a, b), (b, a)):
            prompts.append(
                template.format(
                    prompt=fence(prompt),
                    reference_block=reference_block(reference),
                    response_a=fence(responses[first]),
                    response_b=fence(responses[second]),
                )
            )
    params = SamplingParams(max_tokens=max_tokens, structured=_constraint("choice", structured))
    completions = await backend.generate(prompts, params)
    outcomes: list[tuple[int, int, float]] = []
    unreadable = 0
    for n, (a, b) in enumerate(pairs):
        results = []
        for k, (first, _second) in enumerate(((a, b), (b, a))):
            try:
                choice = parse_choice(completions[2 * n + k][0].full_text, ("A", "B"))
            except VerdictError:
                unreadable += 1
                continue
            if choice == "tie":
                results.append(0.5)
            else:  # did `a` win this ordering?
                results.append(1.0 if (choice == "A") == (first == a) else 0.0)
        if results:
            outcomes.append((a, b, sum(results) / len(results)))
    index = {i: k for k, i in enumerate(live)}
    strengths = bradley_terry(len(live), [(index[a], index[b], r) for a, b, r in outcomes])
    for i in live:
        games = [(r if a == i else 1.0 - r) for a, b, r in outcomes if i in (a, b)]
        if not games:
            out[i] = JudgeResult(None, "parse_error", "no readable comparison for this response")
            continue
        win_rate = sum(games) / len(games)
        bt = strengths[index[i]]
        value = win_rate if score == "win_rate" else bt / (bt + 1.0)
        out[i] = JudgeResult(
            value,
            "judged",
            None,
            {
                "win_rate": win_rate,
                "bt_strength": bt,
                "comparisons": len(games),
                "unreadable_verdicts": unreadable,
            },
        )
    # guarded responses lose every comparison they were kept out of: score 0 stands
    return [out[i] for i in range(len(items))]
