"""Pure reward functions (no I/O): math equivalence, multiple choice, string checks, format,
weighted combinations; and :class:`CheckPool`, which runs them under a hard deadline."""

from referee.verifiers.check_pool import CheckPool, TimedOut, WorkerFailed

__all__ = ["CheckPool", "TimedOut", "WorkerFailed"]
