"""Walking a grader's tree (``weighted`` parts) to the leaves one backend scores.

Judges, PRM estimates and group graders are resolved before the batch is scored: each such leaf
is replaced by a ``precomputed`` node holding its score, so the rest of the batch path sees only
leaves it can score itself.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

__all__ = ["Path", "has_type", "leaves", "replace"]

Path = tuple[int, ...]
"""Where a leaf is: the indices of the ``weighted`` parts leading to it (``()``: the root)."""


def has_type(grader: dict[str, Any], types: Collection[str]) -> bool:
    """Whether the grader is, or has among its ``weighted`` parts, a leaf of ``types``."""
    if grader["type"] in types:
        return True
    return grader["type"] == "weighted" and any(
        has_type(p["grader"], types) for p in grader["graders"]
    )


def leaves(
    grader: dict[str, Any], types: Collection[str], path: Path = ()
) -> list[tuple[Path, dict[str, Any]]]:
    """Every leaf of ``types`` with its path, in order."""
    if grader["type"] in types:
        return [(path, grader)]
    if grader["type"] == "weighted":
        found = []
        for k, part in enumerate(grader["graders"]):
            found.extend(leaves(part["grader"], types, (*path, k)))
        return found
    return []


def replace(grader: dict[str, Any], path: Path, node: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``grader`` with the leaf at ``path`` replaced by ``node``."""
    if not path:
        return node
    parts = list(grader["graders"])
    head, rest = path[0], path[1:]
    parts[head] = {**parts[head], "grader": replace(parts[head]["grader"], rest, node)}
    return {**grader, "graders": parts}
