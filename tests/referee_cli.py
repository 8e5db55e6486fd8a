"""``referee(*args)``: the ``referee`` command line run as a user runs it, in a process of its
own (``python -m referee.services.cli.main``), stdin closed, output captured."""

from __future__ import annotations

import os
import subprocess
import sys


def referee(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``referee ARGS`` with this environment and ``env``; the finished process."""
    return subprocess.run(
        [sys.executable, "-m", "referee.services.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
