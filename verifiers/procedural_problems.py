"""Generated problems of the reasoning-gym families: a config checked against the task's config
class and its JSON values turned back into the field types (enums, tuples, nested dataclasses),
the datasets (cached per task, config, seed and size), ``generate`` (reproducible problems,
JSON-safe) and ``example_solution`` (a valid answer to a generated problem).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import typing
from typing import Any

from referee.verifiers.procedural_catalog import (
    _FIXED,
    EXAMPLE_SOLUTION,
    ProceduralError,
    _require,
    jsonable,
)

__all__ = ["example_solution", "generate"]


def _check_config(task: str, config: dict[str, Any]) -> None:
    _, config_cls = _require(task)
    names = {f.name for f in dataclasses.fields(config_cls)} - _FIXED
    for key in config:
        if key in _FIXED:
            raise ProceduralError(f"config field {key!r} is set by referee (use the seed option)")
        if key not in names:
            raise ProceduralError(
                f"task {task!r} has no config field {key!r}; its fields: {', '.join(sorted(names))}"
            )


def _coerce(hint: Any, value: Any) -> Any:
    """A JSON value back to the config field's type: enums from their values, tuples."""
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            return value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type) and isinstance(value, dict):
        try:
            return hint(**_typed_config(hint, value))
        except TypeError:
            return value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for arg in args:
            if isinstance(arg, type) and issubclass(arg, enum.Enum):
                try:
                    return arg(value)
                except ValueError:
                    continue
        return value
    if isinstance(value, list) and origin in (list, tuple, set, frozenset):
        inner = args[0] if args else Any
        items = [_coerce(inner, v) for v in value]
        return items if origin is list else origin(items)
    return value


def _typed_config(config_cls: type, config: dict[str, Any]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # unresolvable annotations: pass the values as they are
        return config
    return {k: _coerce(hints.get(k, Any), v) for k, v in config.items()}


@functools.lru_cache(maxsize=256)
def _dataset(task: str, config_json: str, seed: int, size: int) -> Any:
    dataset_cls, config_cls = _require(task)
    config = json.loads(config_json)
    try:
        cfg = config_cls(**_typed_config(config_cls, config), seed=seed, size=size)
        return dataset_cls(config=cfg)
    except (AssertionError, TypeError, ValueError, KeyError) as exc:
        raise ProceduralError(
            f"task {task!r} refuses the config: {exc or type(exc).__name__}"
        ) from exc


def _config_key(config: dict[str, Any] | None) -> str:
    return json.dumps(config or {}, sort_keys=True)


def generate(
    task: str, config: dict[str, Any] | None, seed: int, n: int, start: int = 0
) -> list[dict[str, Any]]:
    """Problems ``start .. start+n-1`` of the task for a seed and config: each
    ``{"index", "question", "answer", "entry"}``, where ``entry`` (answer and metadata) is what
    :func:`score` needs. The same arguments give the same problems."""
    config = dict(config or {})
    _check_config(task, config)
    if n < 0 or start < 0:
        raise ProceduralError("n and start must not be negative")
    dataset = _dataset(task, _config_key(config), seed, start + n)
    problems = []
    for index in range(start, start + n):
        try:
            item = dataset[index]
        except MemoryError:
            raise  # the worker's memory cap: its own failure, with nothing allocated to say so
        except Exception as exc:
            raise ProceduralError(
                f"the {task!r} generator failed on problem {index} with this config "
                f"({type(exc).__name__}: {str(exc)[:200]})"
            ) from exc
        answer = item.get("answer")
        problems.append(
            {
                "index": index,
                "question": str(item["question"]),
                "answer": None if answer is None else str(answer),
                "entry": {
                    "answer": None if answer is None else str(answer),
                    "metadata": jsonable(item.get("metadata", {})),
                },
            }
        )
    return problems


def example_solution(task: str, entry: dict[str, Any]) -> str | None:
    """A valid answer to a generated problem: its reference answer, or for a family without one,
    the example solution its metadata holds (as text the scorer reads), if any."""
    if entry.get("answer") is not None:
        return str(entry["answer"])
    key = EXAMPLE_SOLUTION.get(task)
    value = (entry.get("metadata") or {}).get(key) if key else None
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)
