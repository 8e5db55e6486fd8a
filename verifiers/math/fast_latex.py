r"""A small recursive-descent reader for the LaTeX most symbolic answers are written in.

latex2sympy2_extended's ANTLR parser costs about 10 ms per answer, which makes symbolic answers
two orders of magnitude slower than numbers. Most of them use a tiny subset: numbers, one-letter
variables, ``+ - * /``, ``\cdot``, ``\times``, ``^``, ``\frac``, ``\sqrt``, ``\sqrt[n]``, ``\pi``,
parentheses and implicit multiplication (``2x``, ``(x+1)(x-1)``, ``3\sqrt{2}``). This module reads
exactly that subset in tens of microseconds and returns None for anything else, which then goes to
latex2sympy2_extended. It builds the tree unevaluated, like latex2sympy2_extended, so the guards
see ``9^{9^{9}}`` before anything computes it, and it follows the same conventions (letters are
lower-cased, ``e`` is Euler's number, ``i`` the imaginary unit is substituted by the caller).
A differential test checks it against latex2sympy2_extended on generated expressions.
"""

from __future__ import annotations

import re
from typing import Any

import sympy

__all__ = ["parse_simple_latex"]

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?|\.\d+)|(?P<cmd>\\[A-Za-z]+)|(?P<letter>[A-Za-z])|(?P<op>[-+*/^(){}\[\]]))"
)
_FUNCTIONS = {
    r"\sin": sympy.sin,
    r"\cos": sympy.cos,
    r"\tan": sympy.tan,
    r"\cot": sympy.cot,
    r"\sec": sympy.sec,
    r"\csc": sympy.csc,
}
_COMMANDS = {r"\frac", r"\sqrt", r"\pi", r"\cdot", r"\times", *_FUNCTIONS}
_MAX_TOKENS = 400


class _Unsupported(Exception):
    pass


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    n = len(text)
    while pos < n:
        if text[pos].isspace():
            pos += 1
            continue
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _Unsupported
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind == "cmd" and value not in _COMMANDS:
            raise _Unsupported
        tokens.append((kind, value))
        if len(tokens) > _MAX_TOKENS:
            raise _Unsupported
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise _Unsupported
        self.i += 1
        return tok

    # expr := ['+'|'-'] term (('+'|'-') term)*
    def expr(self) -> Any:
        terms: list[Any] = []
        sign = 1
        tok = self.peek()
        if tok is not None and tok[1] in "+-" and tok[0] == "op":
            self.take()
            sign = -1 if tok[1] == "-" else 1
        terms.append(self._signed(self.term(), sign))
        while (tok := self.peek()) is not None and tok[0] == "op" and tok[1] in "+-":
            self.take()
            terms.append(self._signed(self.term(), -1 if tok[1] == "-" else 1))
        return terms[0] if len(terms) == 1 else sympy.Add(*terms, evaluate=False)

    @staticmethod
    def _signed(value: Any, sign: int) -> Any:
        return value if sign == 1 else sympy.Mul(sympy.S.NegativeOne, value, evaluate=False)

    # term := factor ((('*'|'/'|\cdot|\times)? factor))*   (juxtaposition multiplies)
    def term(self) -> Any:
        value = self.power()
        while (tok := self.peek()) is not None:
            kind, text = tok
            if text in ("*", r"\cdot", r"\times"):
                self.take()
                value = sympy.Mul(value, self.power(), evaluate=False)
            elif text == "/":
                self.take()
                value = sympy.Mul(
                    value,
                    sympy.Pow(self.power(), sympy.S.NegativeOne, evaluate=False),
                    evaluate=False,
                )
            elif (
                kind in ("num", "letter")
                or text in ("(", "{", r"\frac", r"\sqrt", r"\pi")
                or (text in _FUNCTIONS)
            ):
                if kind == "num" and self._last_was_number():
                    raise _Unsupported  # "2 3" is not a product anyone writes
                if text == r"\frac" and self._last_was_number():
                    raise _Unsupported  # 2\frac{1}{2} is a mixed number: latex2sympy's reading
                value = sympy.Mul(value, self.power(), evaluate=False)
            else:
                break
        return value

    def _last_was_number(self) -> bool:
        return self.i > 0 and self.tokens[self.i - 1][0] == "num"

    # power := atom ('^' exponent)?
    def power(self) -> Any:
        base = self.atom()
        tok = self.peek()
        if tok is not None and tok[1] == "^":
            self.take()
            exponent = self.group_or_single()
            if (nxt := self.peek()) is not None and nxt[1] == "^":
                raise _Unsupported  # a^b^c: leave the convention to latex2sympy
            return sympy.Pow(base, exponent, evaluate=False)
        return base

    def group_or_single(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise _Unsupported
        if tok[1] == "{":
            self.take()
            inner = self.expr()
            self.take("}")
            return inner
        if tok[0] == "num":
            self.take()
            if len(tok[1]) > 1:  # x^23 means x^{2}3 in LaTeX: leave it to latex2sympy
                raise _Unsupported
            return sympy.Integer(int(tok[1])) if "." not in tok[1] else sympy.Rational(tok[1])
        if tok[0] == "letter":
            self.take()
            return self.letter(tok[1])
        if tok[1] == r"\pi":
            self.take()
            return sympy.pi
        raise _Unsupported

    @staticmethod
    def letter(ch: str) -> Any:
        ch = ch.lower()
        if ch == "e":
            return sympy.E
        return sympy.Symbol(ch)

    def atom(self) -> Any:
        kind, text = self.take()
        if kind == "num":
            if "." in text:
                return sympy.Rational(text)
            return sympy.Integer(int(text))
        if kind == "letter":
            if (tok := self.peek()) is not None and tok[1] == "(":
                raise _Unsupported  # f(x): a function application, latex2sympy's business
            return self.letter(text)
        if text in ("(", "{"):
            inner = self.expr()
            self.take(")" if text == "(" else "}")
            return inner
        if text == r"\pi":
            return sympy.pi
        if text == r"\frac":
            num = self.group_or_single()
            den = self.group_or_single()
            return sympy.Mul(
                num, sympy.Pow(den, sympy.S.NegativeOne, evaluate=False), evaluate=False
            )
        if text == r"\sqrt":
            index: Any = 2
            if (tok := self.peek()) is not None and tok[1] == "[":
                self.take()
                index = self.expr()
                self.take("]")
            radicand = self.group_or_single()
            return sympy.Pow(
                radicand, sympy.Pow(index, sympy.S.NegativeOne, evaluate=False), evaluate=False
            )
        if text in _FUNCTIONS:
            return self.function(_FUNCTIONS[text])
        raise _Unsupported

    def function(self, fn: Any) -> Any:
        """``\\sin x``, ``\\sin(2x)``, ``\\sin{x}``, ``\\sin^2 x``: anything looser is ambiguous."""
        exponent = None
        if (tok := self.peek()) is not None and tok[1] == "^":
            self.take()
            exponent = self.group_or_single()
        tok = self.peek()
        if tok is None:
            raise _Unsupported
        if tok[1] in ("(", "{"):
            self.take()
            arg = self.expr()
            self.take(")" if tok[1] == "(" else "}")
        elif tok[0] in ("letter", "num"):
            self.take()
            arg = self.letter(tok[1]) if tok[0] == "letter" else sympy.Rational(tok[1])
            nxt = self.peek()
            if nxt is not None and nxt[1] not in ("+", "-", ")", "}", "]"):
                # latex2sympy reads \cos x \cdot y as cos(x*y) and \sin 2x as sin(2x):
                # an unbracketed argument must end the term here, or the reading is its own.
                raise _Unsupported
        else:
            raise _Unsupported
        value = fn(arg, evaluate=False)
        return value if exponent is None else sympy.Pow(value, exponent, evaluate=False)


def parse_simple_latex(text: str) -> Any | None:
    """The unevaluated sympy tree of ``text``, or None when it is outside the subset."""
    try:
        tokens = _tokenize(text)
        if not tokens:
            return None
        parser = _Parser(tokens)
        value = parser.expr()
        if parser.i != len(tokens):
            return None
        return value
    except (_Unsupported, RecursionError):
        return None
