"""Prompts from referee's curriculum instead of a static file.

The server keeps each procedural task's pass rate (from the rewards it computes) and level;
this iterator asks it for problems drawn by failure rate at each task's current level::

    from referee.trainer_adapter.curriculum import CurriculumSource

    source = CurriculumSource("http://127.0.0.1:8000", tasks=["basic_arithmetic", "sudoku"])
    batch = source.draw(64)          # rows: prompt, answer, grader, data_source, ...
    for row in source:               # endless: one /v1/curriculum/problems call per batch_size
        ...

Rows have the columns ``referee dataset`` writes (``prompt`` as chat messages or text,
``answer``, ``grader`` as JSON, ``data_source``, ``reward_model``, ``extra_info``), so the TRL
reward function (``grader`` column) and the veRL ``compute_score`` (``extra_info["grader"]``)
score them unchanged; scoring them through ``/v1/rewards`` is what moves the curriculum.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

from referee.client.environment_models import (
    CurriculumProblemsRequest,
    CurriculumResponse,
    ProblemsResponse,
)
from referee.client.errors import error_for_problem
from referee.client.sdk_base import _Closing

__all__ = ["CurriculumSource", "problem_row"]


def problem_row(problem: dict[str, Any], prompt_format: str = "chat") -> dict[str, Any]:
    grader = problem["grader"]
    grader_json = json.dumps(grader, separators=(",", ":"))
    answer = problem.get("answer") or ""
    prompt: Any = problem["prompt"]
    return {
        "prompt": [{"role": "user", "content": prompt}] if prompt_format == "chat" else prompt,
        "answer": answer,
        "grader": grader_json,
        "data_source": f"reasoning_gym/{problem['task']}",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {
            "index": problem["index"],
            "task": problem["task"],
            "level": grader.get("level"),
            "grader": grader_json,
        },
    }


class CurriculumSource(_Closing):
    """An endless iterator of dataset rows drawn from the server's curriculum (closes its HTTP
    client on ``close()`` or at the end of a ``with`` block)."""

    def __init__(
        self,
        url: str,
        tasks: list[str] | None = None,
        batch_size: int = 64,
        api_key: str | None = None,
        prompt_format: str = "chat",
        seed: int | None = None,
        timeout_s: float = 300.0,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout_s)
        self.tasks = tasks
        self.batch_size = batch_size
        self.prompt_format = prompt_format
        self._seed = seed
        self._draws = 0

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = self._http.post(path, json=body)
        if r.status_code >= 400:
            try:
                problem: Any = r.json()
            except ValueError:
                problem = r.text
            raise error_for_problem(r.status_code, problem)
        return dict(r.json())

    def draw(self, n: int) -> list[dict[str, Any]]:
        """``n`` rows drawn now (tasks ∝ 1 − pass rate, each at its task's level)."""
        seed = None if self._seed is None else (self._seed + self._draws) % 2**32
        self._draws += 1
        body = CurriculumProblemsRequest(n=n, tasks=self.tasks, seed=seed).model_dump()
        out = ProblemsResponse.model_validate(self._post("/v1/curriculum/problems", body))
        return [problem_row(p.model_dump(), self.prompt_format) for p in out.problems]

    def state(self) -> CurriculumResponse:
        r = self._http.get("/v1/curriculum")
        r.raise_for_status()
        return CurriculumResponse.model_validate(r.json())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while True:
            yield from self.draw(self.batch_size)
