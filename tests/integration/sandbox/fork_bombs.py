"""The fork bombs every isolating backend must contain, and what is checked of each: the same
programs, limits and checks for bubblewrap (test_sandbox_hostile.py) and docker
(test_sandbox_other_backends.py)."""

from __future__ import annotations

import time

from referee.sandbox import Limits, RunStatus, SandboxBackend, run_program

BASH_FORK_BOMB = ":(){ :|:& };:"
PYTHON_FORK_BOMB = (
    "import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
    "            import time; time.sleep(30)\n        n += 1\n"
    "except OSError as e:\n    print('fork failed after', n, e.errno)\n"
)


def assert_bash_fork_bomb_contained(backend: SandboxBackend, within_s: float) -> None:
    """The bash fork bomb, 32 processes at most and 2 s of wall time: whatever status it ends
    with, the run is over within ``within_s``."""
    started = time.monotonic()
    result = run_program(
        BASH_FORK_BOMB, "bash", backend, limits=Limits(wall_time_s=2.0, max_processes=32)
    )
    took = time.monotonic() - started
    assert result.status in (RunStatus.TIME_LIMIT, RunStatus.RUNTIME_ERROR, RunStatus.OK), result
    assert took < within_s, f"the fork bomb's run took {took:.1f} s"


def assert_python_fork_bomb_hits_pids_limit(backend: SandboxBackend) -> None:
    """Python forking until fork fails, 16 processes at most: it is told so (OSError) before its
    16th child and says so."""
    result = run_program(
        PYTHON_FORK_BOMB, "python", backend, "", Limits(wall_time_s=5.0, max_processes=16)
    )
    assert result.status is RunStatus.OK, (result.message, result.stderr)
    assert result.stdout.startswith("fork failed after"), result.stdout
    assert int(result.stdout.split()[3]) < 16, result.stdout
