"""Code runners: what the scoring stages and the sandbox routes ask of "the sandbox", with one
implementation that runs programs here and one that forwards them to sandbox nodes.

A runner runs whole programs — run once (``/v1/sandbox/run``, SandboxFusion's ``/run_code``,
``referee run``), one program on several inputs (a ``python`` grader's responses), and a
``code`` grader's tests (compile once, every test) — never single commands, so the remote
implementation (:class:`~referee.services.execution.remote.RemoteSandbox`) needs no toolchain
and a compiled binary never crosses the network. Every call is blocking: the sandbox slots
(:class:`~referee.services.execution.slots.SandboxExecutor`) run it in one of their threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from referee.client.errors import InvalidRequest
from referee.client.models import LanguageInfo, SandboxLanguages
from referee.sandbox import (
    LanguageUnavailable,
    PreparedProgram,
    RunResult,
    SandboxBackend,
    available_languages,
    get_language,
    prepare,
)
from referee.sandbox.python_packages import bound_distributions
from referee.services.execution.program import Program, ProgramLimits
from referee.services.execution.program_tests import grade_code

__all__ = ["CodeRunner", "LocalRunner"]


class CodeRunner(Protocol):
    """Whole programs in the sandbox, here or on a node."""

    name: str

    def check_language(self, language: str) -> str:
        """The canonical name of a language that can run, or ``InvalidRequest`` (422)."""
        ...

    def languages(self, slots: int) -> SandboxLanguages: ...

    def run_once(self, program: Program, stdin: str) -> tuple[RunResult | None, RunResult]:
        """Compile (if needed) and run once: ``(compile_result, run_result)``; a failed compile
        is both (the run did not happen)."""
        ...

    def run_each(
        self, program: Program, stdins: Sequence[str], preload: Sequence[str] = ()
    ) -> list[RunResult]:
        """One program run once per input, in order (``preload``: standard modules a Python
        program of referee's own imports on every run, imported once where runs share a
        sandbox)."""
        ...

    def grade_code(
        self, grader: dict[str, Any], response: str, limits: ProgramLimits
    ) -> tuple[float, dict[str, Any]]:
        """A ``code`` grader's score and details for one response."""
        ...

    def close(self) -> None: ...


class LocalRunner:
    """Programs run here, on an isolation backend (bubblewrap, docker, unsafe_local)."""

    def __init__(self, backend: SandboxBackend) -> None:
        self.backend = backend
        self.name = backend.name

    def check_language(self, language: str) -> str:
        try:
            return get_language(language).name
        except LanguageUnavailable as exc:
            raise InvalidRequest(str(exc)) from exc

    def languages(self, slots: int) -> SandboxLanguages:
        names = available_languages()
        return SandboxLanguages(
            backend=self.name,
            available=True,
            reason=None,
            languages=[
                LanguageInfo(
                    name=n,
                    compiled=get_language(n).compiled,
                    packages=list(bound_distributions(get_language(n).binds)),
                )
                for n in names
            ],
            slots=slots,
        )

    def run_once(self, program: Program, stdin: str) -> tuple[RunResult | None, RunResult]:
        with self._prepare(program) as prepared:
            if not prepared.ready:
                assert prepared.compile_result is not None
                return prepared.compile_result, prepared.compile_result
            return prepared.compile_result, prepared.run(stdin, program.limits.run)

    def run_each(
        self, program: Program, stdins: Sequence[str], preload: Sequence[str] = ()
    ) -> list[RunResult]:
        """Prepared once; each input in a process of its own, inside one sandbox where the
        backend can (``ProgramSession``, which imports ``preload`` once there)."""
        with self._prepare(program) as prepared, prepared.session(preload) as session:
            return [session.run(stdin, program.limits.run) for stdin in stdins]

    def grade_code(
        self, grader: dict[str, Any], response: str, limits: ProgramLimits
    ) -> tuple[float, dict[str, Any]]:
        return grade_code(grader, response, self.backend, limits)

    def _prepare(self, program: Program) -> PreparedProgram:
        """The program compiled (if its language needs it) in this backend."""
        compile_limits = program.limits.compile
        return prepare(program.code, program.language, self.backend, compile_limits=compile_limits)

    def close(self) -> None:
        """The backend outlives the runner (it holds nothing per server)."""
