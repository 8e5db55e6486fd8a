"""``unsafe_local``: runs programs as plain subprocesses with rlimits only. NOT isolation.

The program can read everything the service can read, reach the network and signal the
service's processes. It exists for a laptop without bubblewrap or Docker and is only built when
the operator opts in explicitly (``REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL=true``); see
``referee.sandbox.selection``. ``/code`` and ``/work`` in argv, env and cwd are rewritten to
the program's host directory and a fresh temporary work dir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from referee.sandbox.backend import (
    StartCounter,
    communicate_request,
    finished_result,
    looks_like_oom,
)
from referee.sandbox.models import ExecRequest, RunResult, RunStatus
from referee.sandbox.resource_limits import preexec_rlimits, rlimits_for

__all__ = ["UnsafeLocalBackend"]

_OOM_MARKERS = (b"MemoryError", b"std::bad_alloc", b"OutOfMemoryError")


class UnsafeLocalBackend(StartCounter):
    """Plain subprocesses with rlimits and a process-group kill. For trusted code only."""

    name = "unsafe_local"

    def run(self, request: ExecRequest) -> RunResult:
        self.count_start(request)
        limits = request.limits
        work = Path(tempfile.mkdtemp(prefix="referee-local-"))
        code = request.program_dir or work

        def host(value: str) -> str:
            for inner, outer in (("/code", code), ("/work", work)):
                if value == inner or value.startswith(inner + "/"):
                    return str(outer) + value[len(inner) :]
            return value.replace("/code/", f"{code}/").replace("/work/", f"{work}/")

        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(work),
            "TMPDIR": str(work),
            "LANG": "C.UTF-8",
        }
        env.update({k: host(v) for k, v in request.env.items()})
        rlimits = rlimits_for(limits, address_space=request.limit_address_space)
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                [host(a) for a in request.argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=host(request.cwd),
                env=env,
                start_new_session=True,
                preexec_fn=preexec_rlimits(rlimits),
            )
        except OSError as exc:
            shutil.rmtree(work, ignore_errors=True)
            return RunResult(status=RunStatus.SANDBOX_ERROR, message=f"cannot start: {exc}")

        def kill() -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

        try:
            raw = communicate_request(proc, request, started=started, kill=kill)
        finally:
            kill()
            shutil.rmtree(work, ignore_errors=True)
        oom = looks_like_oom(raw, _OOM_MARKERS)
        return finished_result(raw, limits, shell_style=False, oom_killed=oom)
