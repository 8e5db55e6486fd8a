"""One sandbox per program, each test its own process inside it (the bwrap backend's batches).

``BatchSandbox`` starts one bwrap sandbox (namespaces, seccomp, uid 65534, one cgroup) for a
prepared program and runs ``batch_supervisor.py`` in it as the first process. Each ``run`` hands
the supervisor one test (its stdin, time and output limits) and gets that test's outcome back:
the test ran as its own process (for Python, a fork of the supervisor's already-started lean
interpreter; otherwise an exec of the built program), and before the answer every process it
left was killed and /work, /tmp, /dev/shm and System V IPC were emptied.

``run`` returns ``None`` when the sandbox cannot give a trustworthy answer: the supervisor died
or stalled (a test can signal it: same uid), cleaning failed, or the limits differ from the
batch's. The caller then runs that test (and, with a new batch, the next ones) the old way. A
test that was OOM-killed ends the batch after its answer (the cgroup's OOM counter only tells
one kill), so the next test gets a fresh sandbox.

``REFEREE_SANDBOX_PER_TEST=1`` turns batches off (one sandbox per test, the earlier path), for
comparison.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Sequence

from referee.sandbox.backend import finished_result, looks_like_oom
from referee.sandbox.cgroups import RunCgroup
from referee.sandbox.models import ExecRequest, Limits, RunResult
from referee.sandbox.process_io import RawOutcome
from referee.sandbox.resource_limits import rlimits_for
from referee.sandbox.supervised import SupervisedSandbox, supervisor_source

__all__ = ["BatchSandbox", "batches_enabled"]

_SUPERVISOR = supervisor_source("batch_supervisor.py")
_ANSWER_SLACK_S = 6.0  # the supervisor's own kill (2 s) + exit grace + cleaning (2 s)
_TRUE = {"1", "true", "yes", "on"}
_RLIMIT_CPU = resource.RLIMIT_CPU
_RLIMIT_AS = resource.RLIMIT_AS


def batches_enabled() -> bool:
    """False when ``REFEREE_SANDBOX_PER_TEST`` asks for one sandbox per test."""
    return os.environ.get("REFEREE_SANDBOX_PER_TEST", "").strip().lower() not in _TRUE


class BatchSandbox:
    """A live sandbox serving one program's tests. Not thread-safe: one test at a time."""

    def __init__(self, backend: object, template: ExecRequest, python_exe: str) -> None:
        from referee.sandbox.bwrap_backend import BwrapBackend

        assert isinstance(backend, BwrapBackend)
        self.backend = backend
        self.limits = template.limits
        self.alive = False
        self.tests_run = 0
        self._sandbox: SupervisedSandbox | None = None
        self._cgroup: RunCgroup | None = None
        self._cpu_used = 0.0
        self._limit_as = template.limit_address_space
        self._site: list[str] = []
        self._start(template, python_exe)

    # -- start --------------------------------------------------------------------------------

    def _start(self, template: ExecRequest, python_exe: str) -> None:
        request = ExecRequest(
            argv=(python_exe, "-I", "-S", "-B", "-c", _SUPERVISOR),
            limits=template.limits,
            env=template.env,
            program_dir=template.program_dir,
            program_dir_writable=False,
            cwd="/work",
            toolchain_dirs=template.toolchain_dirs,
            hidden_dirs=template.hidden_dirs,
            binds=template.binds,
            limit_address_space=template.limit_address_space,
        )
        # The hidden site-packages the chosen packages are bound into: on a forked test's
        # sys.path, as `site` puts them on a fresh `python -I`'s (the supervisor runs with -S).
        self._site = [
            h for h in template.hidden_dirs if any(t.startswith(h + "/") for _, t in template.binds)
        ]
        # The CPU and address-space limits are per test: the supervisor sets them on each.
        rlimits = [r for r in self._rlimits(self.limits) if r[0] not in (_RLIMIT_CPU, _RLIMIT_AS)]
        try:
            self._sandbox = SupervisedSandbox.start(self.backend, request, rlimits)
        except (OSError, ValueError):
            return
        self._cgroup = self._sandbox.cgroup
        self.alive = True

    def _rlimits(self, limits: Limits) -> list[tuple[int, int, int]]:
        no_cgroup = self.backend.cgroups is None
        return rlimits_for(limits, address_space=no_cgroup and self._limit_as, nproc=no_cgroup)

    # -- one test -----------------------------------------------------------------------------

    def run(
        self,
        stdin: bytes,
        limits: Limits,
        *,
        argv: tuple[str, ...] | None,
        path: str,
        preload: Sequence[str] = (),
    ) -> RunResult | None:
        """One test: ``argv`` to exec, or None to run the Python file ``path`` in a fork (of a
        supervisor that has imported the modules of ``preload``)."""
        if not self.alive or limits != self.limits:
            return None
        request: dict[str, object] = {
            "argv": list(argv) if argv is not None else None,
            "path": path,
            "preload": list(preload),
            "site": self._site,
            "stdin": stdin,
            "wall": limits.wall_time_s,
            "rlimits": self._rlimits(limits),
            "stdout_cap": limits.output_bytes,
            "stderr_cap": limits.stderr_bytes,
            "stderr_stop": limits.output_bytes,
        }
        assert self._sandbox is not None
        if not self._sandbox.send(request):
            self.close()
            return None
        answer = self._sandbox.recv(time.monotonic() + limits.wall_time_s + _ANSWER_SLACK_S)
        if answer is None or not isinstance(answer.get("stdout"), bytes):
            self.close()  # the supervisor was killed or stopped: nothing it says counts
            return None
        self.tests_run += 1
        returncode = answer.get("returncode")
        raw = RawOutcome(
            returncode=returncode if isinstance(returncode, int) else None,
            stdout=_bytes(answer.get("stdout")),
            stderr=_bytes(answer.get("stderr")),
            stdout_overflow=bool(answer.get("overflow")),
            stderr_truncated=bool(answer.get("err_truncated")),
            timed_out=bool(answer.get("timed_out")),
            wall_time_s=_float(answer.get("wall")),
            stderr_overflow=bool(answer.get("err_overflow")),
        )
        oom = False
        cpu: float | None = None
        if self._cgroup is not None:
            oom = self._cgroup.oom_killed()
            total = self._cgroup.cpu_time_s()
            if total is not None:
                cpu, self._cpu_used = max(0.0, total - self._cpu_used), total
        maxrss = answer.get("maxrss")
        result = finished_result(
            raw,
            limits,
            shell_style=True,
            oom_killed=oom if self._cgroup is not None else looks_like_oom(raw),
            cpu_time_s=cpu,
            memory_peak_bytes=maxrss if isinstance(maxrss, int) and maxrss > 0 else None,
        )
        if oom or not answer.get("clean"):
            self.close()  # the next test gets a fresh sandbox
        return result

    def close(self) -> None:
        self.alive = False
        self._cgroup = None
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.close()


def _bytes(value: object) -> bytes:
    return value if isinstance(value, bytes) else b""


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
