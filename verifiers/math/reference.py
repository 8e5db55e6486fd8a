r"""Reading the reference like an answer, not taking it as literal text.

Pipelines pass many things as the ground truth: a bare answer (``\frac{1}{2}``), one wrapped in
math delimiters (``$\frac{1}{2}$``, ``\(...\)``), one with words around it (``$125$ miles``,
``answer is 0.6666667``), or a whole MATH/NuminaMath ``solution`` that ends in ``\boxed{...}``.
:func:`read_reference` returns the answer such a reference states, and how it was read:

- ``boxed``: the last ``\boxed{}`` (boxes joined only by commas, ``and``, spacing or ``\text{}``
  labels, ``\boxed{1}, \boxed{2}``, are one list: ``boxes``);
- ``final_answer`` / ``gsm8k``: the answer after a final-answer cue or GSM8K's ``####``;
- ``whole``: the reference itself (math delimiters and unit words are dropped when it is
  parsed; if it is prose, it is unparseable and the check says ``bad_reference``).
"""

from __future__ import annotations

from referee.verifiers.math.cues import cue_answer, gsm8k_answer
from referee.verifiers.math.segments import box_run, boxes

__all__ = ["read_reference"]


def read_reference(reference: str) -> tuple[str, str]:
    """(the answer text the reference states, how it was read)."""
    text = reference.strip()
    if "box" in text:
        found = boxes(text, unclosed_tail=True)
        if found:
            run = box_run(text, found)
            parts = list(dict.fromkeys(" ".join(b.content.split()) for b in run))
            if len(parts) > 1:
                return ", ".join(parts), "boxes"
            return found[-1].content.strip(), "boxed"
    cue = cue_answer(text)
    if cue is not None and cue.answer:
        return cue.answer.strip(), "final_answer"
    mark = gsm8k_answer(text)
    if mark is not None:
        return mark, "gsm8k"
    return text, "whole"
