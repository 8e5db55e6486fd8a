"""String checks with the semantics of OpenAI's ``string_check`` grader.

    >>> from referee.verifiers.string_check import string_check
    >>> string_check("The capital is Paris.", "paris", "ilike").score
    1.0

- ``eq``: the response equals the reference; ``ne``: it does not.
- ``like``: the reference is a substring of the response (case-sensitive).
- ``ilike``: the same, ignoring case (Unicode case folding, so "STRASSE" is like "straße").

``strip`` (default on) removes surrounding whitespace from both sides before ``eq`` / ``ne``;
``like`` / ``ilike`` compare the texts as given. An empty reference for ``like`` / ``ilike`` would
match every response, so it is a ``bad_reference`` (score 0) rather than a free reward.
Pure and linear-time (Python's substring search).
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from referee.verifiers.result import CheckResult

__all__ = ["StringOperation", "string_check"]

StringOperation = Literal["eq", "ne", "like", "ilike"]
_OPERATIONS: Final = get_args(StringOperation)


def string_check(
    response: str, reference: str, operation: StringOperation, *, strip: bool = True
) -> CheckResult:
    """Score 1.0 when ``operation`` holds between ``response`` and ``reference``, else 0.0.

    Raises :class:`ValueError` for an operation other than eq, ne, like, ilike.
    """
    if operation not in _OPERATIONS:
        raise ValueError(f"unknown string_check operation {operation!r}; use one of {_OPERATIONS}")
    if operation in ("eq", "ne"):
        left, right = (response.strip(), reference.strip()) if strip else (response, reference)
        passed = (left == right) == (operation == "eq")
        reason = "equal to the reference" if left == right else "differs from the reference"
    else:
        if not reference:
            return CheckResult(0.0, "bad_reference", reason=f"empty reference for {operation}")
        if operation == "like":
            passed = reference in response
        else:
            passed = reference.casefold() in response.casefold()
        reason = "reference not found in the response"
    if passed:
        return CheckResult(1.0, "correct")
    return CheckResult(0.0, "wrong", reason=reason)
