"""Guards against judge hacking, applied before a response reaches a judge.

Reference-based judges are fooled most of the time by "master key" responses that carry no
content (":", "Thought process:", "Let's solve this step by step.") and by responses that address
the judge ("ignore previous instructions", "[RESULT] 5"). Such responses are scored 0 without
asking the judge (:func:`screen` says why), and what reaches the judge is fenced so it cannot
close its own section of the prompt (:func:`fence`).
"""

from __future__ import annotations

import re

__all__ = ["fence", "screen"]

_MASTER_KEYS = {
    "thought process",
    "let's solve this step by step",
    "let's think step by step",
    "let me think step by step",
    "let's solve this problem step by step",
    "solution",
    "answer",
    "the answer is",
    "explanation",
    "step 1",
    "sure",
    "okay",
    "here is the solution",
    "let me solve this",
    "i think",
    "final answer",
    "reasoning",
    "analysis",
    "解",
    "答案",
}
_INJECTION = [
    re.compile(
        r"ignore (?:all |any |the )?(?:previous|above|prior|earlier) (?:instructions|"
        r"prompts?|rules)",
        re.IGNORECASE,
    ),
    re.compile(
        r"\byou are (?:now )?(?:the |a |an )?(?:judge|grader|evaluator|reward model)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:give|assign|award|rate|score|grade) (?:this|the|my) (?:response|answer|"
        r"solution)?\s*(?:a |an |with )?(?:score|grade|rating|\d+)",
        re.IGNORECASE,
    ),
    re.compile(r"\[RESULT\]|\[\[\s*(?:A|B|C|tie|\d+)\s*\]\]", re.IGNORECASE),
    re.compile(r"</?(?:response|reference|question|criteria)>", re.IGNORECASE),
    re.compile(r"\b(?:system|assistant)\s*:\s*(?:you|the judge)", re.IGNORECASE),
]
_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)


def screen(response: str) -> str | None:
    """Why ``response`` must not reach a judge, or None when it may."""
    stripped = response.strip()
    if not _PUNCT.sub("", stripped):
        return "the response is empty or only punctuation"
    words = " ".join(re.sub(r"[^\w\s']+", " ", stripped.lower()).split())
    if words in _MASTER_KEYS:
        return f"the response carries no content beyond {stripped[:40]!r}"
    head = response[:20_000]
    for pattern in _INJECTION:
        m = pattern.search(head)
        if m:
            return f"the response addresses the judge ({m.group(0)[:40]!r})"
    return None


def fence(text: str, limit: int = 12_000) -> str:
    """The response as it is shown to the judge: bounded and unable to close its section."""
    text = text if len(text) <= limit else text[:limit] + "\n[... truncated ...]"
    return text.replace("<", "‹").replace(">", "›")
