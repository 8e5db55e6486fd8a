"""The reasoning-gym families referee serves (``families()``, for ``GET /v1/environments``) and
their difficulty levels (``level_count``, ``config_at_level``: the curriculum's levels whose
config the task accepts, renumbered from 0), the per-family tables of what referee knows about
them (families it does not serve, families without a reference answer, the per-family checks and
repairs :func:`referee.verifiers.procedural.score` applies), :class:`ProceduralError` and
``jsonable`` (reasoning-gym's configs and metadata made JSON-safe).

reasoning-gym is imported on first use, never at import time of this module.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import re
import typing
from collections.abc import Callable
from typing import Any, Final

__all__ = [
    "EXAMPLE_SOLUTION",
    "EXCLUDED",
    "HASH_SEED_DEPENDENT",
    "NO_REFERENCE",
    "ProceduralError",
    "available",
    "config_at_level",
    "families",
    "family_names",
    "jsonable",
    "level_count",
]


EXCLUDED: Final[dict[str, str]] = {
    "composite": "a weighted mix of other families: draw the families themselves (the "
    "curriculum source mixes tasks by failure rate)",
    "game_of_life_halting": "its scorer gives 1 to any non-empty answer (it compares "
    "bool(answer) with bool('True'/'False'), both true), so it cannot tell right from wrong",
}
"""reasoning-gym families referee does not serve, with the reason."""


NO_REFERENCE: Final[dict[str, str]] = {
    "boxnet": "no single answer: the scorer simulates the proposed action plan",
    "graph_color": "no single answer: the scorer checks that the proposed coloring is proper",
    "propositional_logic": "no single answer: the scorer checks that the proposed conclusion "
    "follows from the premises",
    "rubiks_cube": "no single answer: the scorer applies the proposed moves to the cube",
    "rush_hour": "no single answer: the scorer plays the proposed moves on the board",
}
"""Served families whose entries carry no reference answer (``answer`` is None): the scorer
verifies a proposed solution, so any valid solution scores 1."""


EXAMPLE_SOLUTION: Final[dict[str, str]] = {
    "graph_color": "possible_answer",
    "propositional_logic": "example_answer",
    "rubiks_cube": "example_correct_answer",
}
"""Of those, the families whose metadata holds one valid solution, and its key."""


HASH_SEED_DEPENDENT: Final = frozenset(
    {"isomorphic_strings", "knight_swap", "polynomial_multiplication", "ransom_note", "word_ladder"}
)
"""Families whose generators iterate over sets of strings: the same seed gives the same
problems within one process (and its pool workers), and across processes only when they run
with the same ``PYTHONHASHSEED`` (``referee dataset`` sets it)."""


_FIXED: Final = frozenset({"seed", "size"})


def _puzzle24_numbers(answer: str, entry: dict[str, Any]) -> str | None:
    """reasoning-gym's puzzle24 scorer checks that the expression equals 24, not that it uses
    the problem's numbers: without this, any expression equal to 24 would score 1."""
    numbers = (entry.get("metadata") or {}).get("numbers")
    if not isinstance(numbers, list):
        return None
    used = sorted(int(x) for x in re.findall(r"\b\d+\b", answer))
    if used != sorted(int(x) for x in numbers if isinstance(x, int | str) and str(x).isdigit()):
        return "the expression does not use exactly the problem's numbers"
    return None


_GUARDS: Final[dict[str, Callable[[str, dict[str, Any]], str | None]]] = {
    "puzzle24": _puzzle24_numbers
}


_Restore = Callable[[dict[str, Any]], dict[str, Any]]


def _grid_metadata(entry: dict[str, Any]) -> dict[str, Any]:
    """ARC scorers compare tuple-of-tuple grids: JSON turned them into lists."""
    meta = dict(entry.get("metadata") or {})
    for key in ("input", "output"):
        grid = meta.get(key)
        if isinstance(grid, list):
            meta[key] = tuple(tuple(row) if isinstance(row, list) else row for row in grid)
    return {**entry, "metadata": meta}


_RESTORE: Final[dict[str, _Restore]] = {"arc_agi": _grid_metadata, "rearc": _grid_metadata}


class ProceduralError(ValueError):
    """The caller asked for something that does not exist or is invalid (unknown task, unknown
    config field, a config the task's own validation refuses, a malformed entry)."""


def available() -> bool:
    """Is reasoning-gym installed (the ``environments`` extra)?"""
    try:
        import reasoning_gym  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def _registry() -> tuple[dict[str, tuple[type, type]], dict[str, Any]]:
    try:
        import reasoning_gym  # noqa: F401
        from reasoning_gym.factory import CURRICULA, DATASETS
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ProceduralError(
            "procedural tasks need reasoning-gym: pip install 'referee[environments]'"
        ) from exc
    served = {k: v for k, v in DATASETS.items() if k not in EXCLUDED}
    return served, dict(CURRICULA)


def family_names() -> list[str]:
    return sorted(_registry()[0])


def _require(task: str) -> tuple[type, type]:
    datasets, _ = _registry()
    if task not in datasets:
        if task in EXCLUDED:
            raise ProceduralError(f"task {task!r} is not served: {EXCLUDED[task]}")
        raise ProceduralError(
            f"unknown task {task!r}: GET /v1/environments lists the {len(datasets)} tasks"
        )
    return datasets[task]


def jsonable(value: Any) -> Any:
    """Tuples and sets to lists, dataclasses to dicts, non-finite floats and other objects to
    strings: what reasoning-gym puts in configs and metadata, made JSON-safe."""
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((jsonable(v) for v in value), key=repr)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return jsonable(value.item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays
        return jsonable(value.tolist())
    return str(value)


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _default_of(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return jsonable(field.default)
    if field.default_factory is not dataclasses.MISSING:
        return jsonable(field.default_factory())
    return None


def _description(cls: type) -> str:
    doc = (cls.__doc__ or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


@functools.cache
def families() -> list[dict[str, Any]]:
    """Every served task family: name, category, description, config fields (name, type,
    default), difficulty attributes from its curriculum (levels per attribute, the config
    fields each sets), whether its entries carry a reference answer, and notes."""
    datasets, curricula = _registry()
    out = []
    for name in sorted(datasets):
        dataset_cls, config_cls = datasets[name]
        module = dataset_cls.__module__.split(".")
        fields = [
            {"name": f.name, "type": _type_name(f.type), "default": _default_of(f)}
            for f in dataclasses.fields(config_cls)
            if f.name not in _FIXED
        ]
        attributes = []
        if name in curricula:
            for attr in curricula[name]().attributes.values():
                targets = (
                    [attr.lower_field_name, attr.upper_field_name]
                    if hasattr(attr, "lower_field_name")
                    else [attr.field_name]
                )
                attributes.append(
                    {
                        "name": attr.name,
                        "description": attr.description or "",
                        "levels": jsonable(list(attr.levels)),
                        "default_level": attr.default_level,
                        "fields": targets,
                    }
                )
        notes = []
        if name in NO_REFERENCE:
            notes.append(NO_REFERENCE[name])
        if name in EXAMPLE_SOLUTION:
            notes.append(f"one valid solution is in metadata.{EXAMPLE_SOLUTION[name]}")
        if name in _GUARDS:
            notes.append("referee also checks that the answer uses exactly the problem's numbers")
        if name in HASH_SEED_DEPENDENT:
            notes.append("reproducible across processes only with the same PYTHONHASHSEED")
        out.append(
            {
                "name": name,
                "category": module[1] if len(module) >= 3 else "other",
                "description": _description(dataset_cls),
                "config": fields,
                "difficulty": attributes,
                "levels": level_count(name),
                "reference_answer": name not in NO_REFERENCE,
                "notes": notes,
            }
        )
    return out


@functools.cache
def _valid_levels(task: str) -> tuple[int, ...]:
    """The curriculum's global levels whose config the task accepts (some reasoning-gym
    curricula define levels their own config validation refuses)."""
    _require(task)
    curricula = _registry()[1]
    if task not in curricula:
        return ()
    curriculum = curricula[task]()
    top = max((len(a.levels) for a in curriculum.attributes.values()), default=0)
    valid = []
    for level in range(top):
        curriculum.set_global_level(level)
        try:
            config = curriculum.generate_configuration()
            if hasattr(config, "validate"):
                config.validate()
        except (AssertionError, TypeError, ValueError, KeyError):
            continue
        valid.append(level)
    return tuple(valid)


def level_count(task: str) -> int:
    """How many difficulty levels referee offers for the task: its curriculum's levels whose
    config is valid, renumbered from 0 (0: no usable curriculum)."""
    return len(_valid_levels(task))


def config_at_level(
    task: str, level: int, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The task's config at a global difficulty level of its curriculum (levels past an
    attribute's last one use its last one), with ``overrides`` on top; JSON-safe."""
    _require(task)
    curricula = _registry()[1]
    valid = _valid_levels(task)
    if not valid:
        if level != 0:
            raise ProceduralError(f"task {task!r} has no usable curriculum: only level 0 exists")
        return dict(overrides or {})
    if not 0 <= level < len(valid):
        raise ProceduralError(f"task {task!r} has levels 0 to {len(valid) - 1}; got {level}")
    curriculum = curricula[task]()
    curriculum.set_global_level(valid[level])
    config = curriculum.generate_configuration()
    data = {}
    for attr in curriculum.attributes.values():  # only the fields the curriculum sets
        names = (
            [attr.lower_field_name, attr.upper_field_name]
            if hasattr(attr, "lower_field_name")
            else [attr.field_name]
        )
        for name in names:
            data[name] = jsonable(getattr(config, name))
    data.update(overrides or {})
    return data
