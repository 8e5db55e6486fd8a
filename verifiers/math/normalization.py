r"""String-level clean-up of an answer before it is parsed.

Turns the many ways models write the same answer into one LaTeX-ish form: unicode math
(``√2``, ``−5``, ``½``, ``≤``) into LaTeX, math delimiters and spacing commands away,
``\dfrac``/``\tfrac`` into ``\frac``, thousands separators (``1,000``, ``1\,000``, ``1{,}000``,
``1 000``) removed, degrees, percent signs, currency and trailing units recorded and dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from referee.verifiers.math.config import MathConfig

__all__ = ["Normalized", "normalize"]

_UNICODE = {
    "−": "-",
    "–": "-",
    "—": "-",
    "‐": "-",
    "×": r"\times ",
    "÷": r"\div ",
    "·": r"\cdot ",
    "⋅": r"\cdot ",
    "∞": r"\infty ",
    "π": r"\pi ",
    "≤": r"\le ",
    "≥": r"\ge ",
    "≠": r"\ne ",
    "∪": r"\cup ",
    "∩": r"\cap ",
    "∈": r"\in ",
    "∅": r"\emptyset ",
    "θ": r"\theta ",
    "α": r"\alpha ",
    "β": r"\beta ",
    "λ": r"\lambda ",
    "±": r"\pm ",
    "∓": r"\mp ",
    "½": "(1/2)",
    "⅓": "(1/3)",
    "⅔": "(2/3)",
    "¼": "(1/4)",
    "¾": "(3/4)",
    "⅕": "(1/5)",
    "⅛": "(1/8)",
    "\u2009": " ",
    "\u202f": " ",
    "\u00a0": " ",
    "\u2061": "",
    "⟨": "(",
    "⟩": ")",
    "\u200b": "",
    "ℝ": r"\mathbb{R}",
    "∖": r"\setminus ",
    "→": r"\to ",
}
_UNICODE_RE = re.compile("|".join(map(re.escape, _UNICODE)))
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SUPERSCRIPT_RUN = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+")
_SQRT_UNICODE = re.compile(r"[√∛∜]\s*(\([^()]*\)|\{[^{}]*\}|\d+(?:\.\d+)?|[A-Za-z]|\\pi)")
_DELIMS = re.compile(r"^\s*(\$\$|\$|\\\(|\\\[)(.*?)(\$\$|\$|\\\)|\\\])\s*$", re.DOTALL)
_SPACING = re.compile(
    r"(?<!\\)\\[,;:!> ]|\\quad|\\qquad|~|\\displaystyle|\\left(?![a-z])|\\right(?![a-z])|"
    r"\\[bB]ig{1,2}[lr]?(?![a-z])|\\limits"
)
_FRAC_ALIAS = re.compile(r"\\[dtc]frac(?![a-z])")
_DEGREES = re.compile(
    r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|°|\\degree|\^\{\\text\{o\}\}|"
    r"\s*\\text\{\s*degrees?\s*\}|\s+degrees?\b"
)
_DEGREE_MARK = r"\s*(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°)"
_TRIG_OF_DEGREES = re.compile(
    r"\\(sin|cos|tan|cot|sec|csc)\s*(?:\(\s*(?P<p>\d+(?:\.\d+)?)" + _DEGREE_MARK + r"\s*\)|"
    r"\{\s*(?P<b>\d+(?:\.\d+)?)" + _DEGREE_MARK + r"\s*\}|(?P<n>\d+(?:\.\d+)?)" + _DEGREE_MARK + ")"
)
"""``\\sin 15^\\circ``: an angle in degrees inside a trigonometric function is its radians (the
degree sign is otherwise dropped, which made it ``sin(15)``)."""
_PERCENT = re.compile(r"\s*(?:\\%|%|\\text\{\s*\\?%\s*\}|\\text\{\s*percent\s*\}|\s+percent)\s*$")
_CURRENCY = re.compile(r"\\\$|\$|\\text\{\s*\\?\$\s*\}|USD|€|£|¥|\\euro")
_TEXT_CMD = re.compile(
    r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|textnormal|operatorname)\s*"
    r"\{([^{}]*)\}"
)
_TRAILING_UNIT = re.compile(
    r"^(?P<head>.*?[\d}\)\]\\a-zA-Z])\s*(?:\\(?:text|mbox|mathrm|textnormal|textbf|textit|textrm|mathbf)"
    r"\{\s*(?P<tunit>[^{}]*)\}(?:\^\{?\d\}?)?|"
    r"\s(?P<word>[a-zA-Z]{2,}(?:\s+[a-zA-Z]{2,}){0,3})(?:\^\{?\d\}?)?(?:/[a-zA-Z]+)?\.?)\s*$"
)
_MATH_THOUSANDS = re.compile(r"(?<=\d),\\!\s*(?=\d{3}(?!\d))|(?<=\d)\s*\{\s*,\s*\}\s*(?=\d)")
"""MATH's thousands style: ``10,\\!080``, ``11,\\! 111,\\! 100``, ``14{,}916``, ``14 {, }916``."""
_DECIMAL_COMMA = re.compile(r"(?<![\d,.])(\d+),(\d+)(?![\d,.])")
_DOUBLE_ESCAPED = re.compile(
    r"\\\\(?=(?:frac|dfrac|tfrac|sqrt|text|textbf|mathrm|boxed|pi|le|ge|leq|geq|ne|neq|lt|gt|"
    r"cdot|times|infty|left|right|pm|mp|in|cup|cap|circ|alpha|beta|theta|sin|cos|tan|log|ln)"
    r"(?![A-Za-z]))"
)
"""``\\\\frac`` for ``\\frac``: text escaped twice (a LaTeX line break is never followed by a
command name without a space in answers)."""
_GLUED_OR = re.compile(r"(?<=[\d)\]}])\s*(or|and)\s*(?=[A-Z(\[\\{-])")
_NOT_EQUAL = re.compile(r"!=|=\\not|\\not\s*=")
_FRAC_DIGITS = re.compile(r"\\frac\s*(\d)\s*(\d)")
_FRAC_HALF_BRACED = re.compile(r"\\frac\s*(\d)\s*\{|\\frac\s*(\{[^{}]*\})\s*(\d)")
_SQRT_DIGIT = re.compile(r"\\sqrt\s*(\d)(?![\d.])")
_SQRT_CALL = re.compile(r"(?<![\\A-Za-z])sqrt\s*\(([^()]*)\)")
_THOUSANDS_COMMA = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+)(?![\d,])(?=(\.\d+)?(?![\d,]))")
_THOUSANDS_SPACE = re.compile(r"^[+-]?\d{1,3}(?: \d{3})+(?:\.\d+)?$")
_TRAILING_PUNCT = re.compile(r"[\s.;,]+$")
_OPTION = re.compile(
    r"^\(([A-Ja-j])\)(?:\s+[A-Za-z][A-Za-z .,'\-]*)?$|^([A-J])[.:)]\s+(?!.*\b[A-J][.:)]\s)\S"
)
"""``(D) Ellipse`` and ``C. x = 42``: the option's letter (not ``A. 1, B. 2``, two parts)."""
_WORDS_ONLY = re.compile(r"^[A-Za-z][A-Za-z \-']*$")
_INFINITY_WORDS = {
    "infinity": r"\infty",
    "inf": r"\infty",
    "positive infinity": r"\infty",
    "+infinity": r"\infty",
    "negative infinity": r"-\infty",
    "minus infinity": r"-\infty",
    "-infinity": r"-\infty",
    "all real numbers": r"(-\infty,\infty)",
    "all reals": r"(-\infty,\infty)",
    "all real values": r"(-\infty,\infty)",
    "the set of all real numbers": r"(-\infty,\infty)",
}
"""Words that name a number or a set: compared as that value, not as text."""
_MODULUS = re.compile(r"\s*\(?\s*\\[pb]?mod\s*\{?\s*\d+\s*\}?\s*\)?\s*$")
"""A trailing modulus (``5 \\pmod{7}``, ``5 \\pmod 7``, ``(\\bmod 7)``): the residue answers."""
_SEGMENT = re.compile(r"\\overline\s*\{\s*([A-Z]{2,3})\s*\}")
"""``\\overline{AB}``, a segment's name, is the name (a bar over digits is a repeating decimal)."""
_UNIT_WORDS_KEEP = {"or", "and", "pi", "infinity", "inf", "undefined", "none"}


@dataclass(frozen=True, slots=True)
class Normalized:
    text: str
    percent: bool = False
    degrees: bool = False
    is_text: bool = False
    """The answer is words, not math (``\\text{Monday}``, ``Yes``)."""


def _unicode(s: str) -> str:
    s = _SUPERSCRIPT_RUN.sub(lambda m: "^{" + m.group(0).translate(_SUPERSCRIPTS) + "}", s)
    s = _SQRT_UNICODE.sub(lambda m: r"\sqrt{" + m.group(1).strip("{}") + "}", s)
    return _UNICODE_RE.sub(lambda m: _UNICODE[m.group(0)], s)


def _shorthand(s: str) -> str:
    r"""``\frac94`` -> ``\frac{9}{4}``, ``\frac3{3}``, ``\frac{1}3``, ``\sqrt3`` -> ``\sqrt{3}``,
    ``sqrt(2)`` -> ``\sqrt{2}``, ``!=`` -> ``\ne``."""
    if "\\frac" in s:
        s = _FRAC_DIGITS.sub(r"\\frac{\1}{\2}", s)
        s = _FRAC_HALF_BRACED.sub(
            lambda m: (
                f"\\frac{{{m.group(1)}}}{{" if m.group(1) else f"\\frac{m.group(2)}{{{m.group(3)}}}"
            ),
            s,
        )
    if "sqrt" in s:
        s = _SQRT_DIGIT.sub(r"\\sqrt{\1}", s)
        s = _SQRT_CALL.sub(r"\\sqrt{\1}", s)
    if "=" in s:
        s = _NOT_EQUAL.sub(r" \\ne ", s)
        s = _GLUED_OR.sub(r" \1 ", s)  # "W(x)=1orW(x)=-1"
    return s


def _strip_units(s: str) -> str:
    for _ in range(3):
        m = _TRAILING_UNIT.match(s)
        if m is None:
            break
        unit = (m.group("tunit") or m.group("word") or "").strip()
        if unit.lower() in _UNIT_WORDS_KEEP or not unit or re.search(r"\d", unit):
            break
        if "(" in unit or len(unit.split()) > 3:  # a remark, not a unit
            break
        head = m.group("head").rstrip()
        if not re.search(r"[\d}]|\\pi|\\infty|\\sqrt", head):
            break
        s = head
    return s


def _trig_radians(m: re.Match[str]) -> str:
    angle = m.group("p") or m.group("b") or m.group("n")
    return f"\\{m.group(1)}(\\frac{{{angle}\\pi}}{{180}})"


def normalize(answer: str, config: MathConfig | None = None) -> Normalized:
    """Return the cleaned answer and what was noted (percent, degrees, text)."""
    cfg = config or MathConfig()
    s = answer.strip()
    for _ in range(2):
        m = _DELIMS.match(s)
        if m:
            s = m.group(2).strip()
    s = _unicode(s)
    if "\\overline" in s:
        s = _SEGMENT.sub(r"\1", s)
    s = s.replace("\n", " ").replace("\t", " ")
    if "\\\\" in s:
        s = _DOUBLE_ESCAPED.sub(lambda _: "\\", s)
    if "," in s or "{" in s:
        s = _MATH_THOUSANDS.sub("", s)
    s = _SPACING.sub(" ", s)
    s = _FRAC_ALIAS.sub(r"\\frac", s)
    s = _shorthand(s)
    s = s.replace("\\langle", "(").replace("\\rangle", ")")
    s = s.replace("{,}", "").replace("{ ,}", "")
    s = re.sub(r"\\(?:dots|ldots|cdots)|…", "...", s)
    s = _TRAILING_PUNCT.sub("", s) if not s.endswith("...") else s
    if s.endswith("\\"):  # "185\\": a stray backslash (or a line break) ends nothing
        s = s.rstrip("\\").rstrip()
    s = _CURRENCY.sub("", s).strip()
    if "mod" in s:
        s = _MODULUS.sub("", s)

    if "\\circ" in s or "°" in s:
        s = _TRIG_OF_DEGREES.sub(_trig_radians, s)
    degrees = False
    if _DEGREES.search(s):
        degrees = True
        s = _DEGREES.sub("", s).strip()
    percent = False
    if _PERCENT.search(s):
        percent = True
        s = _PERCENT.sub("", s).strip()

    if s.lower() in _INFINITY_WORDS:
        return Normalized(_INFINITY_WORDS[s.lower()], percent, degrees)
    option = _OPTION.match(_TEXT_CMD.sub(lambda m: m.group(1), s).strip())
    if option:  # "(D) Ellipse" answers the option "(D)"
        return Normalized((option.group(1) or option.group(2)).upper(), percent, degrees)
    # A bare word answer: \text{Monday}, "Yes", "no solution".
    unwrapped = _TEXT_CMD.sub(lambda m: m.group(1), s).strip()
    if _WORDS_ONLY.match(unwrapped) and (len(unwrapped) > 1 or s != unwrapped):
        word = " ".join(unwrapped.lower().split())
        if word in _INFINITY_WORDS:
            return Normalized(_INFINITY_WORDS[word], percent, degrees)
        return Normalized(" ".join(unwrapped.split()), percent, degrees, is_text=True)

    whole = _TEXT_CMD.fullmatch(s)
    if whole:
        s = whole.group(1).strip()
    if cfg.strip_units:
        s = _strip_units(s)
        if _PERCENT.search(s):
            percent = True
            s = _PERCENT.sub("", s).strip()
    s = _TEXT_CMD.sub(lambda m: m.group(1), s)
    s = " ".join(s.split())
    if cfg.decimal_comma:
        s = _DECIMAL_COMMA.sub(r"\1.\2", s)
    elif not re.search(r"[(\[{]", s):  # inside brackets a comma separates items
        s = _THOUSANDS_COMMA.sub(lambda m: m.group(1).replace(",", ""), s)
    if _THOUSANDS_SPACE.match(s):
        s = s.replace(" ", "")
    return Normalized(s.strip(), percent, degrees)
