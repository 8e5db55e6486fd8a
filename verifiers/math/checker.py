"""``verify(response, reference)``: extraction, guards, parsing and comparison in one call.

This runs in the calling thread with no deadline of its own: use it directly for trusted input
or inside a worker of :class:`referee.verifiers.CheckPool`, which adds the hard per-check
deadline and memory cap that hostile input needs.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache

from referee.verifiers.math.answer_extraction import extract_answer
from referee.verifiers.math.comparison import equal
from referee.verifiers.math.config import MathConfig
from referee.verifiers.math.guards import Rejected
from referee.verifiers.math.parsing import Unparseable, parse_answer
from referee.verifiers.math.reference import read_reference
from referee.verifiers.math.values import Seq, Value
from referee.verifiers.math.verdict import MathVerdict, Outcome

__all__ = ["parse", "verify"]

EVAL_ERRORS = (  # what reading or comparing parsed answers may raise besides our own errors
    TypeError,
    ValueError,
    ArithmeticError,
    AttributeError,
    RecursionError,
    NotImplementedError,
    IndexError,
    KeyError,
)


def parse(answer: str, config: MathConfig | None = None) -> Value:
    """Parse an answer (no extraction). Raises Unparseable or Rejected."""
    return parse_answer(answer, config or MathConfig())


@lru_cache(maxsize=8192)
def _parse_reference(reference: str, config: MathConfig) -> Value | Exception:
    # Every rollout in a group shares its reference: read and parse it once.
    text, how = read_reference(reference)
    try:
        return parse_answer(text, config)
    except (Unparseable, Rejected, *EVAL_ERRORS) as exc:
        if how == "whole":
            return exc
        return Unparseable(f"{exc} (read {text[:80]!r} from the reference: {how})")


_OPTION_LEAD = re.compile(
    r"\s*(?:\\text(?:bf)?\{\s*)?(?:\(([A-Ja-j])\)|([A-J])[.:)](?=\s))\s*\}?(?:\\ |\s)*(?=\S)"
)
"""An option label before the option's value: ``(B) 12``, ``\\text{(A)}\\ 5``."""
_ANOTHER_LABEL = re.compile(r"\([A-Ja-j]\)")


def _option_and_value(answer: str) -> tuple[str, str] | None:
    """``(B) 12`` -> ("B", "12"); None unless the answer is one label and its option's value
    (``(a) 3, (b) 5`` answers two parts)."""
    m = _OPTION_LEAD.match(answer)
    if m is None or _ANOTHER_LABEL.search(answer, m.end()):
        return None
    return (m.group(1) or m.group(2)).upper(), answer[m.end() :]


def _option_method(answer: str, ref: Value, cfg: MathConfig) -> str | None:
    """An answer given as an option and its value is right when either is the reference: the
    label against a letter reference, the value against any other."""
    parts = _option_and_value(answer)
    if parts is None:
        return None
    letter, value = parts
    label = str(ref)
    if len(label) == 1 and label.isalpha():
        return "option" if label.upper() == letter else None
    try:
        method = equal(ref, parse_answer(value, cfg), cfg)
    except (Unparseable, Rejected, *EVAL_ERRORS):
        return None
    return f"option_{method}" if method else None


def _is_collection(value: Value) -> bool:
    return isinstance(value, Seq) and len(value.items) > 1


def _boxes_as_one_answer(parts: tuple[str, ...], ref: Value, cfg: MathConfig) -> MathVerdict | None:
    """Several boxes at the end (``\\boxed{1}, \\boxed{2}``) against a list or set reference:
    one list answer, right or wrong as a whole. None when the parts do not parse."""
    joined = ", ".join(parts)
    try:
        pred = parse_answer(joined, cfg)
        method = equal(ref, pred, cfg)
    except (Unparseable, Rejected, *EVAL_ERRORS):
        return None
    base = {
        "extracted": joined[:500],
        "extraction": "boxed",
        "parsed_reference": str(ref),
        "parsed_response": str(pred),
    }
    if method:
        return _verdict(Outcome.CORRECT, method=f"boxes_{method}", **base)
    reason = f"the {len(parts)} boxed answers, read as one list, do not equal the reference"
    return _verdict(Outcome.WRONG, reason=reason, **base)


def _verdict(outcome: Outcome, **kw: str | None) -> MathVerdict:
    return MathVerdict(score=1.0 if outcome is Outcome.CORRECT else 0.0, outcome=outcome, **kw)


def verify(response: str, reference: str, config: MathConfig | None = None) -> MathVerdict:
    """Score ``response`` against ``reference``: 1.0 when its final answer equals it, else 0.0."""
    cfg = config or MathConfig()
    ref = _parse_reference(reference, cfg)
    if isinstance(ref, Exception):
        return _verdict(Outcome.BAD_REFERENCE, reason=f"reference: {ref}")
    found = extract_answer(response, cfg)
    if found.answer is None:
        return _verdict(Outcome.NO_ANSWER, reason="no final answer found in the response")
    if found.parts and _is_collection(ref):
        as_list = _boxes_as_one_answer(found.parts, ref, cfg)
        if as_list is not None:
            return as_list
    extracted = found.answer if len(found.answer) <= 500 else found.answer[:500] + "…"
    base = {"extracted": extracted, "extraction": found.source, "parsed_reference": str(ref)}

    parsed: list[Value] = []
    for cand in found.candidates if cfg.hedging_is_wrong else (found.answer,):
        try:
            parsed.append(parse_answer(cand, cfg))
        except Rejected as exc:
            return _verdict(Outcome.REJECTED, reason=str(exc), **base)
        except (Unparseable, *EVAL_ERRORS) as exc:
            if len(found.candidates) == 1:
                return _verdict(Outcome.UNPARSEABLE, reason=str(exc), **base)
    if not parsed:
        return _verdict(Outcome.UNPARSEABLE, reason="no candidate answer could be parsed", **base)
    pred = parsed[-1]
    base["parsed_response"] = str(pred)
    try:
        if len(parsed) > 1 and any(not equal(pred, other, cfg) for other in parsed[:-1]):
            return _verdict(
                Outcome.HEDGED,
                reason=f"{len(found.candidates)} different final answers: "
                + "; ".join(c[:40] for c in found.candidates[:4]),
                **base,
            )
        method = equal(ref, pred, cfg)
    except Rejected as exc:
        return _verdict(Outcome.REJECTED, reason=str(exc), **base)
    except EVAL_ERRORS as exc:
        return _verdict(
            Outcome.UNPARSEABLE, reason=f"comparison failed: {type(exc).__name__}", **base
        )
    if not method:
        method = _option_method(found.answer, ref, cfg)
    if method:
        return _verdict(Outcome.CORRECT, method=method, **base)
    return _verdict(Outcome.WRONG, reason="not equal to the reference", **base)


sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
