"""referee.sandbox: running untrusted, model-written code in isolation, and code rewards.

    from referee.sandbox import select_backend, run_tests, StdioTest

    backend = select_backend()                 # bubblewrap, probed once; see selection.py
    result = run_tests("print(sum(map(int, input().split())))", "python",
                       [StdioTest("1 2\n", "3\n")], backend=backend)
    result.reward()                            # 1.0

Modules: ``models`` (limits, results), ``bwrap_backend`` / ``docker_backend`` /
``local_backend`` (isolation; ``bwrap_command`` builds bubblewrap's command line), ``cgroups``,
``seccomp_filter``, ``resource_limits``, ``process_io`` (capped I/O under a deadline),
``languages`` (recipes), ``programs`` (compile once, run many), ``comparison``, ``drivers`` and
``harness`` (tests and rewards), ``code_extraction`` (the program in a model's response),
``interpreter`` (a persistent, sandboxed Python for multi-turn tool use; its limits, results
and request/answer frames are ``interpreter_cells``; ``supervised`` is the sandbox start-up it
shares with the batches of ``programs``).
No HTTP here: ``referee.services`` wires this to the API.
"""

from referee.sandbox.backend import SandboxBackend
from referee.sandbox.bwrap_backend import BwrapBackend
from referee.sandbox.code_extraction import extract_code, find_code_blocks
from referee.sandbox.comparison import CompareMode, Comparison, outputs_match, values_match
from referee.sandbox.docker_backend import DockerBackend
from referee.sandbox.errors import LanguageUnavailable, SandboxError, SandboxUnavailable
from referee.sandbox.harness import (
    AssertTest,
    CodeResult,
    FunctionCallTest,
    RewardMode,
    StdioTest,
    TestCase,
    TestOutcome,
    TestResult,
    run_tests,
)
from referee.sandbox.interpreter import (
    CellResult,
    CellStatus,
    InterpreterLimits,
    PersistentInterpreter,
)
from referee.sandbox.languages import (
    Language,
    available_languages,
    get_language,
    known_languages,
)
from referee.sandbox.local_backend import UnsafeLocalBackend
from referee.sandbox.models import ExecRequest, Limits, RunResult, RunStatus
from referee.sandbox.programs import PreparedProgram, prepare, run_program
from referee.sandbox.selection import backend_from_env, select_backend

__all__ = [
    "AssertTest",
    "BwrapBackend",
    "CellResult",
    "CellStatus",
    "CodeResult",
    "CompareMode",
    "Comparison",
    "DockerBackend",
    "ExecRequest",
    "FunctionCallTest",
    "InterpreterLimits",
    "Language",
    "LanguageUnavailable",
    "Limits",
    "PersistentInterpreter",
    "PreparedProgram",
    "RewardMode",
    "RunResult",
    "RunStatus",
    "SandboxBackend",
    "SandboxError",
    "SandboxUnavailable",
    "StdioTest",
    "TestCase",
    "TestOutcome",
    "TestResult",
    "UnsafeLocalBackend",
    "available_languages",
    "backend_from_env",
    "extract_code",
    "find_code_blocks",
    "get_language",
    "known_languages",
    "outputs_match",
    "prepare",
    "run_program",
    "run_tests",
    "select_backend",
    "values_match",
]
