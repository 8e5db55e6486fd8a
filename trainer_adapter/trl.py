"""TRL: a ``reward_funcs`` callable for ``GRPOTrainer`` that scores completions through referee.

    from trl import GRPOTrainer
    from referee.trainer_adapter.trl import reward_function

    reward = reward_function("http://127.0.0.1:8000", grader={"type": "math"})
    trainer = GRPOTrainer(model=..., reward_funcs=reward, train_dataset=dataset, args=...)

The callable has exactly the shape TRL calls: ``f(prompts, completions, completion_ids,
**columns) -> list[float | None]`` (``async def`` with ``asynchronous=True``; TRL runs async
reward functions concurrently). Plain completions are strings; conversational ones are
``[{"role": "assistant", "content": ...}]`` and their assistant text is graded.

- The whole batch goes to referee in one ``POST /v1/rewards`` (chunked by the SDK, groups kept
  whole); the G completions of one prompt share a ``group``, so group graders (majority vote,
  length penalty) and per-group statistics work.
- The grader: ``grader=`` a grader object (dict or model) used for every row, a callable
  ``row -> grader``, or None to read a ``grader`` column of the dataset (a dict or its JSON)
  or, with none, the verifier an open-instruct row's ``dataset`` column names (``gsm8k``,
  ``math``, ``ifeval``...: ``grader_specs.OPEN_INSTRUCT_VERIFIERS``) for its ``ground_truth``.
  A grader that needs a reference and has none gets it from the row's first non-empty
  reference column (``reference``, ``answer``, ``solution``, ``ground_truth``, ``label`` by
  default); a code grader without tests gets the ``tests`` column.
- A reward that is not ``valid`` (timeout, worker or sandbox error, a judge with no verdict, a
  bad reference, a group grader without its group, a row whose grader is
  invalid) becomes None: TRL skips it (``failures="zero"`` gives 0.0 instead). A failure of
  the whole call (server unreachable after the SDK's retries) raises, or with
  ``on_error="none"`` gives None for the batch.
- With TRL's ``log_extra`` / ``log_metric`` (TRL >= 1.0 passes them), each completion's
  outcome, extracted answer and weighted parts go to the completions table, and group pass
  rate, all-correct / all-wrong shares, failures and the reward call's latency to the metrics.

:class:`RefereeReward` and the batch-to-items conversion are in ``trl_reward.py``,
:class:`AsyncRefereeReward` in ``trl_async.py`` (both re-exported here).
"""

from __future__ import annotations

from typing import Any

from referee.client.sdk import AsyncRefereeClient
from referee.trainer_adapter.trl_async import AsyncRefereeReward
from referee.trainer_adapter.trl_reward import (
    REFERENCE_COLUMNS,
    Client,
    GraderSpec,
    RefereeReward,
    completion_text,
)

__all__ = [
    "REFERENCE_COLUMNS",
    "AsyncRefereeReward",
    "RefereeReward",
    "completion_text",
    "reward_function",
]


def reward_function(
    client_or_url: Client,
    grader: GraderSpec = None,
    *,
    asynchronous: bool = False,
    **options: Any,
) -> RefereeReward:
    """A TRL ``reward_funcs`` entry scoring through referee (``asynchronous=True``: the
    ``async def`` form). ``options``: ``reference_columns``, ``api_key``, ``chunk_size``,
    ``timeout``, ``max_retries``, ``pass_threshold``, ``failures``, ``on_error``,
    ``log_details``, ``name`` (the name TRL logs it under, default ``referee``)."""
    if asynchronous or isinstance(client_or_url, AsyncRefereeClient):
        return AsyncRefereeReward(client_or_url, grader, **options)
    return RefereeReward(client_or_url, grader, **options)
