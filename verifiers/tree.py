"""The one walker of a grader's tree: graders (plain dicts) that hold other graders.

Two kinds hold graders: ``weighted`` (its ``graders`` parts, each ``{"weight", "grader"}``;
OpenAI's ``multi`` and model graders are lowered to it) and ``length_penalty`` (its inner
``grader``, whose score it penalises). Every other kind is a leaf.

The stages that do not run on the check pool (code and python graders on the sandbox, judges,
PRM estimates, group graders) find their leaves here and put a ``precomputed`` node (the score
and details) in each one's place, so that what reaches the pool is only what it can score
(:mod:`referee.verifiers.registry`). ``length_penalty``'s inner grader is scored as a batch of
its own, so the stages do not descend into it (``inner=False``, the default); resolving names
and filling rows does (``inner=True``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Iterator
from typing import Any

__all__ = [
    "Path",
    "amap_leaves",
    "has_type",
    "iter_leaves",
    "leaves",
    "map_leaves",
    "replace",
]

Path = tuple[int, ...]
"""Where a leaf is: the indices of the ``weighted`` parts leading to it (``()``: the root)."""

Grader = dict[str, Any]


def _parts(grader: Grader) -> list[Grader]:
    return [p["grader"] for p in grader["graders"]] if grader["type"] == "weighted" else []


def iter_leaves(grader: Grader, *, inner: bool = False) -> Iterator[Grader]:
    """Every leaf, depth first, in order (``inner``: through ``length_penalty`` too)."""
    kind = grader["type"]
    if kind == "weighted":
        for part in _parts(grader):
            yield from iter_leaves(part, inner=inner)
    elif kind == "length_penalty" and inner:
        yield from iter_leaves(grader["grader"], inner=inner)
    else:
        yield grader


def has_type(grader: Grader, types: Collection[str]) -> bool:
    """Whether the grader is, or has among its ``weighted`` parts, a leaf of ``types``."""
    kind = grader["type"]
    if kind in types:
        return True
    if kind != "weighted":  # a leaf (the common case: no walk)
        return False
    return any(leaf["type"] in types for leaf in iter_leaves(grader))


def leaves(grader: Grader, types: Collection[str], path: Path = ()) -> list[tuple[Path, Grader]]:
    """Every leaf of ``types`` with its path, in order."""
    if grader["type"] in types:
        return [(path, grader)]
    found: list[tuple[Path, Grader]] = []
    for k, part in enumerate(_parts(grader)):
        found.extend(leaves(part, types, (*path, k)))
    return found


def replace(grader: Grader, path: Path, node: Grader) -> Grader:
    """A copy of ``grader`` with the leaf at ``path`` replaced by ``node``."""
    if not path:
        return node
    parts = list(grader["graders"])
    head, rest = path[0], path[1:]
    parts[head] = {**parts[head], "grader": replace(parts[head]["grader"], rest, node)}
    return {**grader, "graders": parts}


def map_leaves(
    grader: Grader, fn: Callable[[Grader, str], Grader], *, inner: bool = False, where: str = ""
) -> Grader:
    """A copy of ``grader`` with ``fn(leaf, where)`` in each leaf's place; ``where`` is the
    leaf's dotted location below the root (``graders.1.grader``), for error messages."""
    kind = grader["type"]
    if kind == "weighted":
        return {
            **grader,
            "graders": [
                {**p, "grader": map_leaves(p["grader"], fn, inner=inner, where=_at(where, k))}
                for k, p in enumerate(grader["graders"])
            ],
        }
    if kind == "length_penalty" and inner:
        inside = f"{where}.grader" if where else "grader"
        return {**grader, "grader": map_leaves(grader["grader"], fn, inner=inner, where=inside)}
    return fn(grader, where)


async def amap_leaves(grader: Grader, fn: Callable[[Grader], Awaitable[Grader]]) -> Grader:
    """:func:`map_leaves` for a coroutine: the leaves of one grader are resolved at once."""
    if grader["type"] != "weighted":
        return await fn(grader)
    done = await asyncio.gather(*(amap_leaves(p["grader"], fn) for p in grader["graders"]))
    parts = [{**p, "grader": g} for p, g in zip(grader["graders"], done, strict=True)]
    return {**grader, "graders": parts}


def _at(where: str, k: int) -> str:
    return f"{where}.graders.{k}.grader" if where else f"graders.{k}.grader"
