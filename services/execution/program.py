"""What a code runner is given to run: a program, and the limits it runs under."""

from __future__ import annotations

from dataclasses import dataclass

from referee.sandbox import Limits

__all__ = ["Program", "ProgramLimits"]


@dataclass(frozen=True, slots=True)
class ProgramLimits:
    """What the sandbox executor grants a program (``SandboxExecutor.limits``, capped by the
    server's maxima): ``compile`` for its compile step (where the language has one), ``run``
    for each of its runs or tests."""

    run: Limits
    compile: Limits


@dataclass(frozen=True, slots=True)
class Program:
    """A program's source, its language and its limits: one ``run_once`` or ``run_each`` of a
    code runner."""

    code: str
    language: str
    limits: ProgramLimits
