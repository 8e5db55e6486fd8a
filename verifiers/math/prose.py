r"""Telling words from math, so prose is never parsed into a product of letters.

A LaTeX parser reads ``so x = 4`` as ``s*o*x = 4`` and ``The largest n is 34`` as a product of
seventeen letters. :func:`prose_words` finds the words that make a string prose: common English
function words of any length (``so``, ``is``, ``the``, ``of``; in lower case or capitalised:
``NO`` is a name) and longer lower-case or
capitalised words with a vowel that are not names of functions (``volume``, ``Jane``;
not ``sin``, ``lcm``, ``ABCD`` or a subscript such as ``S_{MBCN}``). One-letter and two-letter
names (``x``, ``AB``, ``ab``) are math. LaTeX commands are never words.
"""

from __future__ import annotations

import re

__all__ = ["NEGATIONS", "prose_words"]

_FUNCTION_WORDS = frozenset(
    """a an the so is are was were be been being of to in on at by as if then thus hence
    therefore we us our you it its this that these those which what who whom whose why how
    when where since because but not no nor yes has have had do does did can could may might
    must shall should will would let get gets got give gives gave find found see also with from
    into onto over under than such each every all any some only just very here there note
    answer answers final solution solutions value values equals equal means gives total""".split()
)
_NAMES = frozenset(
    """sin cos tan cot sec csc arcsin arccos arctan arcsec arccsc arccot sinh cosh tanh coth
    sech csch log ln lg exp lim max min sup inf gcd lcm mod bmod pmod det deg arg dim ker sgn
    sign floor ceil binom sqrt frac dfrac tfrac cfrac pi infty infinity cis tg ctg and or
    mathrm mathbf text""".split()
)
NEGATIONS = frozenset(
    "not no never neither nor none cannot can't isn't aren't wasn't doesn't don't".split()
)
_COMMAND = re.compile(r"\\(?:begin|end)\s*\{[^{}]*\}(?:\{[^{}]*\})?|\\[A-Za-z]+")
_SUBSCRIPT = re.compile(r"_\s*(?:\{[^{}]*\}|[A-Za-z0-9])")
_RUN = re.compile(r"(?<![A-Za-z])[A-Za-z]+(?:'[a-z]+)?")
_PROSE_SHAPE = re.compile(r"^(?:[a-z]+|[A-Z][a-z]+)(?:'[a-z]+)?$")
_VOWEL = re.compile(r"[aeiouy]", re.IGNORECASE)


def prose_words(text: str) -> list[str]:
    """The words of ``text`` that make it prose rather than math (empty when there are none)."""
    bare = _SUBSCRIPT.sub(" ", _COMMAND.sub(" ", text))
    found = []
    for m in _RUN.finditer(bare):
        word = m.group(0)
        low = word.lower()
        if low in _NAMES:
            continue
        if low in _FUNCTION_WORDS and (
            (len(word) > 1 and _PROSE_SHAPE.match(word)) or (word == "a" and _is_article(bare, m))
        ):
            found.append(word)
        elif len(word) >= 4 and _PROSE_SHAPE.match(word) and _VOWEL.search(word):
            found.append(word)
    return found


def _is_article(text: str, m: re.Match[str]) -> bool:
    """``a`` is a word only when a word follows it (``a circle``), not in ``a + b``."""
    return bool(re.match(r"\s+[A-Za-z]{2,}", text[m.end() : m.end() + 40]))
