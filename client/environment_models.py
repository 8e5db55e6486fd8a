"""Wire models of the procedural environments and the curriculum (``/v1/environments``,
``/v1/curriculum``). Imports only pydantic."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from referee.client.models import ProceduralGrader

__all__ = [
    "ConfigField",
    "CurriculumProblemsRequest",
    "CurriculumResponse",
    "DifficultyAttribute",
    "EnvironmentsResponse",
    "ExcludedFamily",
    "Family",
    "GeneratedProblem",
    "LevelStats",
    "ProblemsRequest",
    "ProblemsResponse",
    "TaskCurriculum",
]

DEFAULT_INSTRUCTION = "Give only your final answer between <answer> and </answer> tags."


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConfigField(_Model):
    name: str
    type: str
    default: Any = None


class DifficultyAttribute(_Model):
    name: str
    description: str
    levels: list[Any] = Field(..., description="The attribute's value at each of its levels.")
    default_level: int
    fields: list[str] = Field(..., description="The config fields the attribute sets.")


class Family(_Model):
    name: str
    category: str
    description: str
    config: list[ConfigField]
    difficulty: list[DifficultyAttribute]
    levels: int = Field(..., description="Usable difficulty levels (0: no curriculum).")
    reference_answer: bool = Field(
        ..., description="False: the scorer checks a proposed solution (no single answer)."
    )
    notes: list[str] = Field(default_factory=list)


class ExcludedFamily(_Model):
    name: str
    reason: str


class EnvironmentsResponse(_Model):
    families: list[Family]
    excluded: list[ExcludedFamily] = Field(
        default_factory=list, description="reasoning-gym families referee does not serve, and why."
    )


class ProblemsRequest(_Model):
    n: int = Field(16, ge=1, description="How many problems (the server's limit applies).")
    seed: int = Field(0, ge=0, lt=2**32, description="Same seed and config: same problems.")
    start: int = Field(0, ge=0, lt=2**31, description="Index of the first problem.")
    config: dict[str, Any] = Field(
        default_factory=dict, description="Config fields (GET /v1/environments lists them)."
    )
    level: int | None = Field(
        None, ge=0, le=1000, description="A curriculum level: its config, `config` on top."
    )
    instruction: str = Field(
        DEFAULT_INSTRUCTION, max_length=2_000, description="Appended to each question."
    )


class GeneratedProblem(_Model):
    task: str
    index: int
    prompt: str = Field(..., description="The question and the instruction.")
    question: str
    answer: str | None
    grader: ProceduralGrader


class ProblemsResponse(_Model):
    problems: list[GeneratedProblem]
    elapsed_ms: float


class LevelStats(_Model):
    level: int | None
    n: int
    pass_rate: float
    mean_score: float


class TaskCurriculum(_Model):
    task: str
    level: int
    levels: int
    window_n: int = Field(..., description="Results at the current level since the last move.")
    window_pass_rate: float | None
    pass_rate: float | None = Field(
        ..., description="The latest pass rate at the current level (None: none seen yet)."
    )
    weight: float = Field(..., description="The task's share of draws, from 1 - pass rate.")
    per_level: list[LevelStats]


class CurriculumResponse(_Model):
    band: tuple[float, float]
    window: int
    store: str
    tasks: list[TaskCurriculum]


class CurriculumProblemsRequest(_Model):
    n: int = Field(16, ge=1, description="How many problems.")
    tasks: list[str] | None = Field(
        None, max_length=200, description="The tasks to draw from (default: the server's)."
    )
    seed: int | None = Field(
        None, ge=0, lt=2**32, description="Seed of the draw (default: a fresh one)."
    )
    instruction: str = Field(DEFAULT_INSTRUCTION, max_length=2_000)
