r"""Reading the answer that follows a final-answer cue: "The final answer is $28\%$.",
"Answer: 9", "Answer \[ 9 \]", "Final Answer: The largest $n$ is 34.", "#### 72".

The cue is the last one in the text. What follows it is read as:

1. a math segment opening right there (``$...$``, ``$$...$$``, ``\(...\)``, ``\[...\]``): its
   content. A segment that opens but does not close properly (an inline ``$`` running past its
   line) gives no answer at all, rather than a guess from elsewhere in the text (``$376.``, a
   dollar sign before a number, is not an opening);
2. otherwise the rest of the line up to the end of the sentence (the next line when the cue
   ends its line and that line is short). When that sentence is prose, the words are dropped:
   the part after its last ``is``/``are``/``was``/``equals``/``=``; or else its one number or one
   math segment; or else it stays prose (and is then unparseable, never a product of letters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from referee.verifiers.math.prose import NEGATIONS, prose_words
from referee.verifiers.math.segments import math_segments, segment_at

__all__ = ["Cue", "cue_answer", "gsm8k_answer", "sentence_answer"]

_CUE = re.compile(
    r"answer\s*(?:is|=|:)\s*:?[ \t]*|(?P<bare>answer\b)(?=[ \t]*(?:\$|\\\(|\\\[))[ \t]*",
    re.IGNORECASE,
)
"""A cue: "answer is", "answer:", "answer =" ("final answer is", "the answer is" ...), or the
word "answer" right before a math delimiter."""
_GSM8K = re.compile(r"####[ \t]*([^\n]*)")
_QUOTES = "\"'“”‘’`"
_LINK = re.compile(r"\s(?:is|are|was|were|equals|becomes)\s|=")
_NUMBER = re.compile(r"[-+−]?\d[\d,]*(?:\.\d+)?(?:/\d+)?")
_WORD = re.compile(r"[A-Za-z']+")


@dataclass(frozen=True, slots=True)
class Cue:
    answer: str | None
    """None: a math delimiter opened after the cue but did not close properly."""
    start: int
    """Where the cue (its word "answer") is in the text."""


def _mask(text: str) -> tuple[str, list[tuple[int, int, str]]]:
    """``text`` with its math segments blanked out, and the segments (start, end, inner)."""
    segs = [(s.start, s.end, s.inner) for s in math_segments(text)]
    out = []
    last = 0
    for start, end, _ in segs:
        out.append(text[last:start])
        out.append("\x01" * (end - start))
        last = end
    out.append(text[last:])
    return "".join(out), segs


def sentence_answer(sentence: str) -> str:
    """The answer a one-sentence cue answer states, its words dropped (see the module doc)."""
    s = sentence.replace('\\"', '"').strip().strip(_QUOTES).strip()
    masked, segs = _mask(s)
    if not prose_words(masked.replace("\x01", " ")):
        return s
    links = [m for m in _LINK.finditer(masked) if "\x01" not in m.group(0)]
    if links:
        tail = s[links[-1].end() :].strip()
        if tail and not any(w.lower() in NEGATIONS for w in _WORD.findall(tail)):
            return sentence_answer(tail) if tail != s else tail
    words = {w.lower() for w in _WORD.findall(masked)}
    if words & NEGATIONS:
        return s
    numbers: list[str] = _NUMBER.findall(masked)
    if len(segs) == 1 and not numbers:
        return segs[0][2].strip()
    if not segs and len(numbers) == 1:
        return numbers[0]
    return s


def _line_after(text: str, at: int) -> str | None:
    rest = text[at : at + 4000].lstrip("*_ \t")
    if rest.startswith("\n"):  # "The answer is:\n\n42": a short next line is the answer
        nxt = rest.lstrip()
        line = nxt.split("\n", 1)[0]
        if not nxt.startswith(("$", "\\(", "\\[")) and len(line) > 60:
            return None
        rest = nxt
    return rest


def _last_cue(text: str) -> re.Match[str] | None:
    """The last cue, found from the end (the text is scanned once, not matched at every
    position)."""
    low = text.lower()
    pos = len(low)
    while (i := low.rfind("answer", 0, pos)) >= 0:
        m = _CUE.match(text, i)
        if m is not None and (m.group("bare") is None or i == 0 or not low[i - 1].isalnum()):
            return m
        pos = i
    return None


def cue_answer(text: str) -> Cue | None:
    """The answer after the last final-answer cue of ``text``; None when there is no cue."""
    last = _last_cue(text)
    if last is None:
        return None
    rest = _line_after(text, last.end())
    if rest is None:
        return None
    rest = rest.lstrip("*_ ").lstrip(_QUOTES).replace('\\"', "", 1).lstrip()
    seg = segment_at(rest, 0)
    if seg is False and not re.match(r"\$\d", rest):  # "$376." is a dollar sign, not math
        return Cue(None, last.start())
    if seg:
        assert not isinstance(seg, bool)
        after = rest[seg.end : seg.end + 200].split("\n", 1)[0]
        # "$12$ and $13$": the sentence goes on with more math; read it whole
        if not re.match(r"\s*(?:and|or|,)\s*(?:\$|\\\()", after):
            return Cue(seg.inner, last.start())
    masked, _ = _mask(rest)
    line_end = masked.find("\n")
    line = rest[: line_end if line_end >= 0 else len(rest)]
    masked_line = masked[: len(line)]
    # A sentence ends at ". " or at a final "." (a decimal point is followed by a digit).
    stop = re.search(r"\.(?:\s|$)", masked_line)
    if stop is not None:
        line = line[: stop.start()]
    line = line.strip().rstrip(".;,!").strip()
    return Cue(sentence_answer(line) if line else None, last.start()) if line else None


def gsm8k_answer(text: str) -> str | None:
    """The text after the last ``####`` (GSM8K's answer mark)."""
    marks = _GSM8K.findall(text)
    return marks[-1].strip() if marks and marks[-1].strip() else None
