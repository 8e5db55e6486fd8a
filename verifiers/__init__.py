"""Pure reward functions (no I/O): math equivalence, multiple choice, string checks, format,
weighted combinations; and :class:`CheckPool`, which runs them under a hard deadline."""

from referee.verifiers.check_pool import (
    CheckPool,
    Lane,
    PoolHealth,
    TimedOut,
    WorkerFailed,
    current_lane,
)

__all__ = ["CheckPool", "Lane", "PoolHealth", "TimedOut", "WorkerFailed", "current_lane"]
