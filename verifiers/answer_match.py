"""Short answers against reference answers, as question-answering rewards score them.

    >>> from referee.verifiers.answer_match import answer_match
    >>> answer_match("<think>...</think><answer>The Eiffel Tower</answer>", ["Eiffel tower"]).score
    1.0

The answer (``extract``): the last ``<answer>...</answer>`` block (``answer_tag``, Search-R1's
and open-instruct's string matcher: none is ``no_answer``, score 0), the text after the
reasoning with its ``<answer>`` tags removed (``after_thinking``, open-instruct's
``string_f1``) or the whole response (``none``); with a ``marker`` (open-instruct's flan rows:
``The answer is: ``), what follows its last occurrence there. Both sides are normalised as
SQuAD v1.1's evaluation does: lower case, ASCII punctuation removed, the articles a/an/the
dropped, whitespace collapsed. The metric: ``em`` (equal to a reference), ``subem`` (a
reference inside the answer) or ``f1`` (the token F1 of SQuAD, the best over the references).
``max_answer_tags``: more opening or closing ``<answer>`` tags than this and the score is a
quarter (Search-R1's guard against a flood of answers). A reference that normalises to nothing
(``the``, ``?!``) is left out: under ``subem`` it would match every answer; with none left the
row is ``bad_reference`` (not valid), where Search-R1's reward would hand out the score. Linear
in the text but for F1's token counts.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from string import punctuation
from typing import Any, Final, Literal

from referee.verifiers.result import result_dict
from referee.verifiers.text_scan import after_thinking

__all__ = [
    "ANSWER_MATCH_OUTCOMES",
    "AnswerMatchResult",
    "Extract",
    "Metric",
    "answer_match",
    "normalize_answer",
    "references_from",
]

Metric = Literal["em", "subem", "f1"]
Extract = Literal["answer_tag", "after_thinking", "none"]
ANSWER_MATCH_OUTCOMES: Final = ("correct", "partial", "wrong", "no_answer", "bad_reference")

_PUNCTUATION = str.maketrans("", "", punctuation)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_OPEN, _CLOSE = "<answer>", "</answer>"


@dataclass(frozen=True, slots=True)
class AnswerMatchResult:
    score: float
    outcome: str
    """One of :data:`ANSWER_MATCH_OUTCOMES`."""
    metric: str
    extracted: str | None = None
    """The answer read from the response."""
    matched: str | None = None
    """The reference that gave the score (the first of the best)."""
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return result_dict(self)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation: lower case, no ASCII punctuation, no a/an/the, single
    spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def references_from(reference: str | list[str]) -> list[str]:
    """The reference answers: a list as it is; text that is JSON of a list of strings or of an
    object with one in ``target`` (Search-R1's and veRL's ground truth, ``{"target": [...]}``)
    the list; other text, itself."""
    if isinstance(reference, list):
        return [str(r) for r in reference]
    text = reference.strip()
    if text[:1] in ("[", "{"):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return [reference]
        if isinstance(value, dict):
            value = value.get("target", value.get("answers"))
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return list(value)
    return [reference]


def _extract(response: str, extract: Extract) -> str | None:
    if extract == "none":
        return response
    if extract == "after_thinking":
        return after_thinking(response).replace(_OPEN, "").replace(_CLOSE, "").strip()
    # as re.finditer(r"<answer>(.*?)</answer>", re.DOTALL) reads it (the last of its matches),
    # in one pass: each block ends at the first closing tag after its opening one
    last, at = None, 0
    while (start := response.find(_OPEN, at)) >= 0:
        end = response.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            break
        last, at = (start + len(_OPEN), end), end + len(_CLOSE)
    return None if last is None else response[last[0] : last[1]].strip()


def _f1(answer: Counter[str], size: int, reference: list[str]) -> float:
    same = sum((answer & Counter(reference)).values())
    if same == 0:
        return 0.0
    precision, recall = same / size, same / len(reference)
    return 2 * precision * recall / (precision + recall)


def answer_match(
    response: str,
    reference: str | list[str],
    metric: Metric = "em",
    *,
    extract: Extract = "answer_tag",
    max_answer_tags: int | None = None,
    marker: str | None = None,
) -> AnswerMatchResult:
    """Score the response's answer against the reference answers (see the module)."""
    # a reference that normalises to nothing ("the", "?!") would match every answer under
    # subem (and an empty one under em): not a reward to hand out, so it is left out
    wanted_of = {ref: normalize_answer(ref) for ref in references_from(reference)}
    references = [ref for ref, wanted in wanted_of.items() if wanted]
    if not references:
        nothing = "no reference answer with a word left after normalisation"
        return AnswerMatchResult(0.0, "bad_reference", metric, reason=nothing)
    answer = _extract(response, extract)
    if answer is not None and marker:
        answer = answer.rpartition(marker)[2].strip()  # after its last one; all of it without
    if answer is None:
        missing = "no <answer>...</answer> block in the response"
        return AnswerMatchResult(0.0, "no_answer", metric, reason=missing)
    said = normalize_answer(answer)
    tokens = said.split() if metric == "f1" else []
    counts = Counter(tokens)
    best, matched = 0.0, None
    reason: str | None = None
    for ref in references:
        wanted = wanted_of[ref]
        if metric == "em":
            score = float(said == wanted)
        elif metric == "subem":
            score = float(wanted in said)
        else:
            score = _f1(counts, len(tokens), wanted.split())
        if score > best:
            best, matched = score, ref
            if best == 1.0:
                break
    if max_answer_tags is not None and best > 0:
        tags = max(response.count(_OPEN), response.count(_CLOSE))
        if tags > max_answer_tags:
            best /= 4
            reason = f"{tags} <answer> tags, more than {max_answer_tags}: a quarter of the score"
    outcome = "correct" if best == 1.0 else "partial" if best > 0 else "wrong"
    if outcome == "wrong":
        reason = f"the answer matches no reference ({metric})"
    return AnswerMatchResult(best, outcome, metric, answer, matched, reason)
