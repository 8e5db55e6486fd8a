"""A program compiled once in the sandbox and run many times: ``prepare()`` / ``PreparedProgram``.

``prepare(source, language, backend)`` writes the source (and any helper files) into a private
host directory, runs the language's compile step in the sandbox with that directory writable at
/code, and returns a ``PreparedProgram``. Its ``run(stdin, limits)`` executes the built program
with /code read-only and a fresh tmpfs work dir each time. Close it (or use ``with``) to delete
the directory. ``run_program`` does all three for a one-off run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from referee.sandbox.backend import SandboxBackend
from referee.sandbox.batch import BatchSandbox, batches_enabled
from referee.sandbox.closing import Closing
from referee.sandbox.languages import Language, get_language
from referee.sandbox.models import SANDBOX_UID, ExecRequest, Limits, RunResult, RunStatus

__all__ = ["PreparedProgram", "ProgramSession", "prepare", "run_program"]


class PreparedProgram(Closing):
    """A program's directory in the sandbox plus the result of its compile step."""

    def __init__(
        self,
        backend: SandboxBackend,
        language: Language,
        directory: Path,
        source_name: str,
        compile_result: RunResult | None,
    ) -> None:
        self.backend = backend
        self.language = language
        self.directory = directory
        self.source_name = source_name
        self.compile_result = compile_result

    @property
    def ready(self) -> bool:
        """True when the program can run (no compile step, or it succeeded)."""
        return self.compile_result is None or self.compile_result.ok

    def run(
        self, stdin: bytes | str = b"", limits: Limits | None = None, *, entry: str | None = None
    ) -> RunResult:
        """Run the program once. ``entry`` runs another file of the directory (interpreted
        languages only: a test driver that imports the program)."""
        if not self.ready:
            assert self.compile_result is not None
            return self.compile_result
        limits = limits or Limits()
        data = stdin.encode() if isinstance(stdin, str) else stdin
        argv = self.language.run_argv(entry or self.source_name, limits)
        return self.backend.run(
            ExecRequest(
                argv=argv,
                stdin=data,
                limits=limits,
                env=self.language.full_env(),
                program_dir=self.directory,
                program_dir_writable=False,
                cwd="/work",
                toolchain_dirs=self.language.run_toolchain_dirs,
                hidden_dirs=self.language.hidden_dirs,
                binds=self.language.binds,
                limit_address_space=self.language.limit_address_space,
            )
        )

    def session(self, preload: Sequence[str] = ()) -> ProgramSession:
        """Runs of this program that share one sandbox where the backend can (bwrap);
        ``preload``: standard modules a Python program's batch imports once, before its runs
        fork from it (see :class:`ProgramSession`)."""
        return ProgramSession(self, preload)

    def close(self) -> None:
        shutil.rmtree(self.directory.parent, ignore_errors=True)


def prepare(
    source: str,
    language: str | Language,
    backend: SandboxBackend,
    *,
    extra_files: Mapping[str, str | bytes] | None = None,
    compile_limits: Limits | None = None,
    work_root: str | None = None,
) -> PreparedProgram:
    """Write ``source`` into a fresh directory and compile it in the sandbox (if compiled)."""
    recipe = get_language(language) if isinstance(language, str) else language
    # A root-only parent keeps other host users out; the program dir itself belongs to the
    # sandbox user so that a compile step can write its output there.
    parent = Path(tempfile.mkdtemp(prefix="referee-prog-", dir=work_root))
    directory = parent / "code"
    directory.mkdir()
    try:
        source_name = recipe.source_name(source)
        (directory / source_name).write_text(source, encoding="utf-8")
        for name, content in (extra_files or {}).items():
            target = directory / name
            if target.parent != directory or name in (source_name, ""):
                raise ValueError(f"bad extra file name {name!r}")
            if isinstance(content, str):
                target.write_text(content, encoding="utf-8")
            else:
                target.write_bytes(content)
        _hand_to_sandbox_user(directory)
        compile_result: RunResult | None = None
        if recipe.compile_argv is not None:
            result = backend.run(
                ExecRequest(
                    argv=recipe.compile_argv(source_name),
                    limits=compile_limits or recipe.compile_limits,
                    env=recipe.full_env(),
                    program_dir=directory,
                    program_dir_writable=True,
                    cwd="/code",
                    toolchain_dirs=recipe.toolchain_dirs,
                    hidden_dirs=recipe.hidden_dirs,
                    binds=recipe.binds,
                    limit_address_space=recipe.limit_address_space,
                    kind="compile",
                )
            )
            if result.status not in (RunStatus.OK, RunStatus.SANDBOX_ERROR):
                reason = result.message or result.status.value
                result = replace(
                    result, status=RunStatus.COMPILE_ERROR, message=f"compilation failed: {reason}"
                )
            compile_result = result
    except BaseException:
        shutil.rmtree(parent, ignore_errors=True)
        raise
    return PreparedProgram(backend, recipe, directory, source_name, compile_result)


def _hand_to_sandbox_user(directory: Path) -> None:
    """chown the program dir to the sandbox uid (when running as root; else leave it)."""
    if os.geteuid() != 0:
        return
    for item in (directory, *directory.iterdir()):
        os.chown(item, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)


def run_program(
    source: str,
    language: str | Language,
    backend: SandboxBackend,
    stdin: bytes | str = b"",
    limits: Limits | None = None,
) -> RunResult:
    """Compile (if needed) and run ``source`` once."""
    with prepare(source, language, backend) as program:
        return program.run(stdin, limits)


class ProgramSession(Closing):
    """Many runs of one ``PreparedProgram``: one sandbox for all of them (see ``sandbox.batch``),
    each run its own process with its own stdin and limits and a clean working state.

    ``run`` has ``PreparedProgram.run``'s signature and outcomes. Where no batch can serve a
    run (another backend, ``REFEREE_SANDBOX_PER_TEST=1``, a batch that failed or whose limits
    differ) it is run in its own sandbox as before. Close it (or use ``with``).

    ``preload``: modules of the standard library that the batch's supervisor imports before a
    Python run forks from it, so that each run finds them imported instead of paying for the
    import itself (``json`` pulls in ``re``: about 20 ms in a fresh ``python -I -S``). For a
    program of referee's own that imports them on every run (the python grader's driver), not
    for a model's program, whose runs should start as a fresh interpreter does.
    """

    def __init__(self, program: PreparedProgram, preload: Sequence[str] = ()) -> None:
        self.program = program
        self.preload = tuple(preload)
        self._batch: BatchSandbox | None = None
        self._batch_failed = False
        self.batched_runs = 0

    def run(
        self, stdin: bytes | str = b"", limits: Limits | None = None, *, entry: str | None = None
    ) -> RunResult:
        program = self.program
        if not program.ready:
            return program.run(stdin, limits, entry=entry)
        limits = limits or Limits()
        data = stdin.encode() if isinstance(stdin, str) else stdin
        batch = self._batch_for(limits)
        if batch is not None:
            name = entry or program.source_name
            python = program.language.name == "python"
            argv = None if python else program.language.run_argv(name, limits)
            preload = self.preload if python else ()
            result = batch.run(data, limits, argv=argv, path=f"/code/{name}", preload=preload)
            if result is not None:
                self.batched_runs += 1
                return result
        return program.run(data, limits, entry=entry)

    def _batch_for(self, limits: Limits) -> BatchSandbox | None:
        if self._batch is not None and self._batch.alive and self._batch.limits == limits:
            return self._batch
        if self._batch is not None:
            self._batch.close()
            self._batch = None
        if self._batch_failed or not batches_enabled():
            return None
        from referee.sandbox.bwrap_backend import BwrapBackend

        backend = self.program.backend
        if not isinstance(backend, BwrapBackend):
            return None
        python = _python_recipe()
        if python is None:
            return None
        language = self.program.language
        toolchain = dict.fromkeys((*language.run_toolchain_dirs, *python.toolchain_dirs))
        hidden = dict.fromkeys((*language.hidden_dirs, *python.hidden_dirs))
        binds = language.binds  # the program's own (a compiled one execs, needing none)
        template = ExecRequest(
            argv=("/bin/true",),
            limits=limits,
            env=language.full_env(),
            program_dir=self.program.directory,
            toolchain_dirs=tuple(toolchain),
            hidden_dirs=tuple(hidden),
            binds=binds,
            limit_address_space=language.limit_address_space,
        )
        batch = BatchSandbox(backend, template, python.run_argv("x", limits)[0])
        if not batch.alive:
            self._batch_failed = True  # do not pay a failed start per test
            return None
        self._batch = batch
        return batch

    def close(self) -> None:
        if self._batch is not None:
            self._batch.close()
            self._batch = None


def _python_recipe() -> Language | None:
    from referee.sandbox.errors import LanguageUnavailable

    try:
        return get_language("python")
    except LanguageUnavailable:
        return None
