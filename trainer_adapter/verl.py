"""veRL: ``compute_score`` functions for veRL's reward managers, scoring through referee.

veRL (0.9.1, the current release; 0.6-0.8 took the same functions under the older keys) loads a
custom reward function from a file path and calls it with the sample's data source, decoded
response, ground truth and extra info; ``reward_kwargs`` are passed as keyword arguments.
veRL 0.9.1's keys, as ``referee train ppo`` writes them::

    reward.custom_reward_function.path=$(python -m referee.trainer_adapter.verl_path)
    reward.custom_reward_function.name=compute_score
    reward.reward_manager.name=naive                   # or dapo, limited
    ++reward.custom_reward_function.reward_kwargs.referee_url=http://127.0.0.1:8000

(veRL 0.9.1's ``main_ppo`` ignores the old top-level ``custom_reward_function.*`` and
``reward_model.reward_manager`` keys; only its fully-async entry point migrates them.) veRL's
older managers (``verl/workers/reward_manager``: naive, prime, dapo, and batch, which calls
``compute_score_batch``: one ``/v1/rewards`` call per training batch) take the same functions.
Every row goes to referee whatever its ``data_source`` (``referee`` in rows ``referee train
ppo`` writes, where veRL's own scorer would raise ``NotImplementedError``).

Where the settings come from, first found wins: keyword arguments (``referee_url``,
``grader``, ``api_key``, ``pass_threshold``), ``extra_info["grader"]`` (a grader object or its
JSON, as ``referee train ppo`` writes it per row), the environment (``REFEREE_URL``,
``REFEREE_GRADER``, ``REFEREE_API_KEY``), then, as veRL's own ``default_compute_score`` tells
rows apart by ``data_source``, ``{"type": "code", "language": "python"}`` for its programming
sources (codecontests, apps, codeforces, taco: graded as its ``prime_code`` grades them, the
``apps`` comparison and imports), Search-R1's exact match for its ``searchR1_*`` sources
(``answer_match``: the last ``<answer>`` block, a quarter past 10 tags), its geometry3k reward
for ``hiyouga/geometry3k`` (0.9 the boxed answer, 0.1 the ``think_boxed`` format) and
``{"type": "math"}`` for the rest (scored 1 right and -1 wrong for the sources veRL scores with
``math_dapo``: math_dapo, math, math_dapo_reasoning, aime*), at
http://127.0.0.1:8000. The ground truth becomes the grader's reference (tests, for a code
grader without tests).

Each call returns ``{"score", "valid", "acc", "referee_failed"}``: veRL takes ``score`` as the
reward and puts every key in ``reward_extra_info``; every sample has the same keys, as veRL's
managers require. ``valid`` is False when referee failed (a timeout, a worker or sandbox fault,
an unreadable verdict, a bad reference, a group grader without its group, the server down): the
score is then 0.0 and says nothing about the response, so mask such samples
(``referee_failed`` is 1.0 for them, ``1 - valid``). In the batch form, rollouts sharing
``extra_info["index"]`` (veRL's row index: the n responses to one prompt) share a group, so
group graders (majority vote, length penalty) work; the per-sample form sees one sample.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any

from referee.client.errors import RefereeError
from referee.client.grader_specs import (
    APPS_SOURCES,
    fill_grader,
    fill_item,
    parse_grader,
    plain,
)
from referee.client.models import RewardItem, RewardResult
from referee.trainer_adapter.client_cache import ClientCache

__all__ = ["DEFAULT_URL", "compute_score", "compute_score_batch", "reset_clients"]

DEFAULT_URL = "http://127.0.0.1:8000"
_clients = ClientCache(max_retries=4)
_client = _clients.get


def reset_clients() -> None:
    """Close the cached clients (tests; a long-lived process that changes servers)."""
    _clients.reset()


def _settings(kwargs: Mapping[str, Any]) -> tuple[str, str | None, float]:
    url = kwargs.get("referee_url") or os.environ.get("REFEREE_URL") or DEFAULT_URL
    api_key = kwargs.get("api_key") or os.environ.get("REFEREE_API_KEY")
    return str(url), (str(api_key) if api_key else None), float(kwargs.get("pass_threshold", 1.0))


def _given(extra_info: Any, kwargs: Mapping[str, Any]) -> Any:
    """The grader the call, the row or the environment gives; None: none does."""
    extra = plain(extra_info) if extra_info is not None else {}
    for spec in (
        kwargs.get("grader"),
        extra.get("grader") if isinstance(extra, dict) else None,
        os.environ.get("REFEREE_GRADER"),
    ):
        if spec:
            return spec
    return None


def _signed(data_source: Any, extra_info: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether the row's score is veRL's ``math_dapo`` one, 1 right and -1 wrong: its sources
    (math_dapo, math, math_dapo_reasoning, aime*) with no grader given, as its
    ``default_compute_score`` scores them. DAPO's overlong penalty (up to -1) is tuned against
    that spread of 2."""
    source = str(data_source or "")
    dapo = source in MATH_DAPO_SOURCES or source.startswith("aime")
    return dapo and _given(extra_info, kwargs) is None


MATH_DAPO_SOURCES = frozenset({"math_dapo", "math", "math_dapo_reasoning"})


def _grader(data_source: Any, extra_info: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    spec = _given(extra_info, kwargs)
    if spec is not None:
        return parse_grader(spec)
    source = str(data_source or "")
    if source in APPS_SOURCES:  # veRL's programming sources: tests as ground truth
        return {"type": "code", "language": "python"}
    if source.startswith("searchR1_"):  # Search-R1's QA rows: {"target": [answers]}
        return {"type": "answer_match", "metric": "em", "max_answer_tags": 10}
    if source == "hiyouga/geometry3k":  # veRL's geo3k: 0.9 the boxed answer, 0.1 its format
        return copy.deepcopy(_GEO3K)
    return {"type": "math"}


_GEO3K = {
    "type": "weighted",
    "graders": [
        {"weight": 0.9, "grader": {"type": "math", "extract": "boxed"}},
        {"weight": 0.1, "grader": {"type": "format", "pattern": "think_boxed"}},
    ],
}


def _item(
    n: int,
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any,
    kwargs: Mapping[str, Any],
) -> RewardItem:
    extra = plain(extra_info) if extra_info is not None else {}
    group = None
    if isinstance(extra, dict) and extra.get("index") is not None:
        group = f"{data_source}:{extra['index']}"
    grader = fill_grader(_grader(data_source, extra_info, kwargs), ground_truth)
    row = {**(extra if isinstance(extra, dict) else {}), "ground_truth": ground_truth}
    grader = fill_item(grader, {"data_source": data_source, **row})  # python/model graders
    prompt = extra.get("question", "") if isinstance(extra, dict) else ""
    return RewardItem.model_validate(
        {
            "id": str(n),
            "prompt": prompt if isinstance(prompt, str) else "",
            "response": solution_str,
            "grader": grader,
            "group": group,
        }
    )


def _score(
    result: RewardResult | None, threshold: float, signed: bool = False
) -> dict[str, float | bool]:
    if result is None or result.score is None or not result.valid:
        return {"score": 0.0, "valid": False, "acc": 0.0, "referee_failed": 1.0}
    score = float(result.score)
    return {
        "score": 2.0 * score - 1.0 if signed else score,
        "valid": True,
        "acc": 1.0 if result.score >= threshold else 0.0,
        "referee_failed": 0.0,
    }


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any = None,
    **kwargs: Any,
) -> dict[str, float | bool]:
    """veRL's per-sample reward function: one referee call for one response."""
    url, api_key, threshold = _settings(kwargs)
    try:
        item = _item(0, data_source, solution_str, ground_truth, extra_info, kwargs)
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return _score(None, threshold)
    try:
        response = _client(url, api_key).rewards([item], pass_threshold=threshold)
    except RefereeError:
        return _score(None, threshold)
    return _score(response.rewards[0], threshold, _signed(data_source, extra_info, kwargs))


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[dict[str, float | bool]]:
    """veRL's batch reward function (``reward_manager=batch``): one ``/v1/rewards`` call."""
    url, api_key, threshold = _settings(kwargs)
    n = len(solution_strs)
    extras = list(extra_infos) if extra_infos is not None else [None] * n
    items: list[RewardItem] = []
    positions: list[int] = []
    for i in range(n):
        try:
            items.append(
                _item(i, data_sources[i], solution_strs[i], ground_truths[i], extras[i], kwargs)
            )
            positions.append(i)
        except (ValueError, TypeError):
            continue
    results: list[RewardResult | None] = [None] * n
    if items:
        try:
            response = _client(url, api_key).rewards(items, pass_threshold=threshold)
        except RefereeError:
            response = None
        if response is not None:
            for pos, result in zip(positions, response.rewards, strict=True):
                results[pos] = result
    return [
        _score(r, threshold, _signed(data_sources[i], extras[i], kwargs))
        for i, r in enumerate(results)
    ]
