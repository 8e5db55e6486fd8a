"""Procedural task families (reasoning-gym): list them, generate problems, score answers.

reasoning-gym ships about a hundred generators of verifiable problems (arithmetic, algebra,
logic puzzles, games, graphs, ARC grids, ...), each with its own scorer and, for most, a
curriculum of difficulty levels. This module is the one place referee touches it:

    families()                                 # names, config schema, difficulty attributes
    generate("basic_arithmetic", {}, seed=1, n=8)   # reproducible problems, JSON-safe
    score("basic_arithmetic", entry, "... <answer>42</answer>")   # (score, details)

``score`` extracts the answer from the response first (``<answer>`` tags, ``\\boxed{}``, the
whole response, or a custom tag) and then calls the task's own ``score_answer``, which may give
partial credit. Scorers are third-party code that runs on model output: the server calls this
module only inside ``CheckPool`` worker processes, where a scorer that hangs or blows up its
memory costs one item. A scorer that raises on a malformed answer scores 0 (``unparseable``).

reasoning-gym is an optional dependency (the ``environments`` extra); it is imported on first
use, never at import time of this module.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import re
import typing
from collections.abc import Callable
from typing import Any, Final

from referee.verifiers.text_scan import find_boxed, last_tag_content

__all__ = [
    "EXAMPLE_SOLUTION",
    "EXCLUDED",
    "EXTRACT_MODES",
    "HASH_SEED_DEPENDENT",
    "NO_REFERENCE",
    "ProceduralError",
    "available",
    "config_at_level",
    "example_solution",
    "extract_answer",
    "families",
    "family_names",
    "generate",
    "level_count",
    "score",
]

EXTRACT_MODES: Final = ("auto", "answer_tag", "boxed", "none")
"""``auto``: the last ``<answer>`` tag, else the last ``\\boxed{}``; ``answer_tag``: only the tag
(``tag`` names another one); ``boxed``: only ``\\boxed{}``; ``none``: the whole response."""

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
_MAX_ANSWER_CHARS: Final = 100_000


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


def extract_answer(
    response: str, mode: str = "auto", tag: str = "answer"
) -> tuple[str | None, str]:
    """The answer read from a response and where it came from (``answer_tag``, ``boxed``,
    ``whole``, or ``none`` when nothing was found). Text up to ``</think>`` is skipped."""
    if mode not in EXTRACT_MODES:
        raise ProceduralError(
            f"unknown extract mode {mode!r}: use one of {', '.join(EXTRACT_MODES)}"
        )
    think = response.rfind("</think>")
    text = response[think + len("</think>") :] if think >= 0 else response
    if mode == "none":
        return text.strip(), "whole"
    if mode in ("auto", "answer_tag"):
        found = last_tag_content(text, tag)
        if found is not None:
            return found.strip(), "answer_tag"
        if mode == "answer_tag":
            return None, "none"
    boxes = find_boxed(text)
    if boxes:
        return boxes[-1].strip(), "boxed"
    return None, "none"


_EVAL_ESCAPE = re.compile(
    r"__|\b(?:exec|eval|open|compile|getattr|setattr|delattr|globals|locals|vars|breakpoint|"
    r"input|help|exit|quit|memoryview)\s*\("
)


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


def score(
    task: str,
    entry: dict[str, Any],
    response: str,
    config: dict[str, Any] | None = None,
    extract: str = "auto",
    tag: str = "answer",
) -> tuple[float, dict[str, Any]]:
    """Score a response with the task's own scorer: (score in [0, 1], details with ``outcome``
    correct / partial / wrong / no_answer / unparseable, ``extracted``, ``extraction``)."""
    config = dict(config or {})
    _check_config(task, config)
    if not isinstance(entry, dict) or not isinstance(entry.get("metadata", {}), dict):
        raise ProceduralError("entry must be an object with `answer` and `metadata`")
    if "answer" in entry and entry["answer"] is not None and not isinstance(entry["answer"], str):
        raise ProceduralError("entry.answer must be a string or null")
    if task not in NO_REFERENCE and not isinstance(entry.get("answer"), str):
        raise ProceduralError(
            f"entry.answer is missing: every {task!r} problem has one (no answer given)"
        )
    answer, where = extract_answer(response, extract, tag)
    details: dict[str, Any] = {"task": task, "extracted": answer, "extraction": where}
    if answer is None:
        return 0.0, {**details, "outcome": "no_answer", "reason": "no answer found in the response"}
    if len(answer) > _MAX_ANSWER_CHARS:
        return 0.0, {
            **details,
            "extracted": answer[:200],
            "outcome": "unparseable",
            "reason": f"the answer is longer than {_MAX_ANSWER_CHARS} characters",
        }
    if _EVAL_ESCAPE.search(answer):  # some scorers hand the answer to eval / sympy.parse_expr
        return 0.0, {
            **details,
            "extracted": answer[:200],
            "outcome": "rejected",
            "reason": "the answer contains a dunder or a call of a Python builtin",
        }
    guard = _GUARDS.get(task)
    reason = guard(answer, entry) if guard is not None else None
    if reason is not None:
        return 0.0, {**details, "outcome": "wrong", "reason": reason}
    full = {"question": "", "answer": None, "metadata": {}, **entry}
    restore = _RESTORE.get(task)
    if restore is not None:
        full = restore(full)
    dataset = _dataset(task, _config_key(config), 0, 1)
    try:
        value = dataset.score_answer(answer, full)
    except (KeyError, IndexError) as exc:
        raise ProceduralError(
            f"the entry lacks what the {task!r} scorer needs ({type(exc).__name__}: {exc}); "
            "send the entry the problem came with"
        ) from exc
    except Exception as exc:  # the scorer choked on the model's answer: a wrong answer
        return 0.0, {
            **details,
            "outcome": "unparseable",
            "reason": f"the task's scorer could not read the answer ({type(exc).__name__})",
        }
    try:
        result = float(value)
    except (TypeError, ValueError):
        result = 0.0
    if not math.isfinite(result):
        result = 0.0
    result = min(1.0, max(0.0, result))
    outcome = "correct" if result >= 1.0 else "partial" if result > 0 else "wrong"
    return result, {**details, "outcome": outcome}
