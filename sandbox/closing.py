"""``with thing:`` closes ``thing`` at the end: the context manager of the sandbox's objects that
hold processes or directories (a prepared program, a program session, a persistent interpreter).
"""

from __future__ import annotations

from typing import Self

__all__ = ["Closing"]


class Closing:
    """A base whose ``__exit__`` calls ``close()``, which the subclass defines."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
