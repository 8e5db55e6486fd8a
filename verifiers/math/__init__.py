"""Math answer verification: is the final answer of a response equal to the reference?

    >>> from referee.verifiers.math import verify
    >>> verify("... so the answer is $\\boxed{\\frac{1}{2}}$.", "0.5").score
    1.0

``verify`` runs in the caller's thread; for untrusted input at scale use
:class:`referee.verifiers.CheckPool`, which adds a hard deadline per check.
"""

from referee.verifiers.math.answer_extraction import Extraction, extract_answer
from referee.verifiers.math.checker import parse, verify
from referee.verifiers.math.config import ExtractMode, MathConfig, PercentPolicy
from referee.verifiers.math.guards import Rejected
from referee.verifiers.math.parsing import Unparseable
from referee.verifiers.math.verdict import MathVerdict, Outcome

__all__ = [
    "ExtractMode",
    "Extraction",
    "MathConfig",
    "MathVerdict",
    "Outcome",
    "PercentPolicy",
    "Rejected",
    "Unparseable",
    "extract_answer",
    "parse",
    "verify",
]
