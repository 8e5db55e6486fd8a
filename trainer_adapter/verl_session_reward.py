"""veRL: the reward of a trajectory whose tools ran in a referee session.

Name this file in ``reward.custom_reward_function.path`` beside the tool of
:mod:`referee.trainer_adapter.verl_tool`. veRL's reward managers (``naive``, ``limited``,
``remote``) copy the trajectory's ``extra_fields`` into ``extra_info``; the tool left the
session there (``extra_info["referee_session"]``), so ``compute_score`` verifies that session
on the decoded response (the final answer is the model's last text) and closes it. A trajectory
that called no tool has no session: one is opened on the row's task (its
``tools_kwargs.<tool>.create_kwargs``, or ``prompt`` and the ground truth as ``reference``) just
to verify the response, then closed, so every sample is scored the same way.

Returns ``{"score", "valid", "acc", "referee_failed", "turns"}`` (the same keys for every
sample, as veRL's managers stack them): ``valid`` is False when referee failed (a fault, the
server down, the session reaped), the score is then 0.0 and says nothing about the response:
mask such samples (``referee_failed`` is 1.0).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from referee.client.errors import RefereeError
from referee.trainer_adapter.client_cache import ClientCache

__all__ = ["compute_score", "reset_clients"]

SESSION_KEY = "referee_session"  # the same key as verl_tool.SESSION_KEY (that module needs veRL)
DEFAULT_URL = "http://127.0.0.1:8000"
_log = logging.getLogger(__name__)

_clients = ClientCache(max_retries=2)


def reset_clients() -> None:
    """Close the cached HTTP clients (tests; a long-lived process that changes servers)."""
    _clients.reset()


def _failed() -> dict[str, Any]:
    return {"score": 0.0, "valid": False, "acc": 0.0, "referee_failed": 1.0, "turns": 0}


def _task(extra: Mapping[str, Any], ground_truth: Any) -> dict[str, Any]:
    """The row's task: the first tool's create_kwargs, else the prompt and ground truth."""
    tools = extra.get("tools_kwargs")
    if isinstance(tools, Mapping):
        for kwargs in tools.values():
            create = kwargs.get("create_kwargs") if isinstance(kwargs, Mapping) else None
            if isinstance(create, Mapping) and create:
                return dict(create)
    task: dict[str, Any] = {}
    raw = extra.get("raw_prompt")
    if isinstance(raw, list) and raw and isinstance(raw[-1], Mapping):
        task["prompt"] = raw[-1].get("content")
    if ground_truth is not None:
        task["reference"] = str(ground_truth)
    return task


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    referee_url: str | None = None,
    env: str | None = None,
    **_: Any,
) -> dict[str, Any]:
    """veRL's per-sample ``compute_score`` over the trajectory's referee session."""
    extra = extra_info or {}
    state = extra.get(SESSION_KEY)
    opened_here = not (isinstance(state, Mapping) and state.get("session_id"))
    url = (  # the server holding the session first: the session lives there
        (None if opened_here else state.get("referee_url"))  # type: ignore[union-attr]
        or referee_url
        or os.environ.get("REFEREE_URL")
        or DEFAULT_URL
    )
    client = _clients.get(str(url))
    try:
        if opened_here:
            name = env or os.environ.get("REFEREE_SESSION_ENV") or "python"
            sid = client.open_session(name, _task(extra, ground_truth)).session_id
        else:
            sid = str(state["session_id"])  # type: ignore[index]
        try:
            result = client.session_verify(sid, solution_str)
        finally:
            try:
                client.close_session(sid)
            except RefereeError:
                pass  # reaped already: it is gone either way
    except (RefereeError, OSError) as exc:  # the sample is masked; say why once per sample
        _log.warning("referee session reward failed: %s: %s", type(exc).__name__, exc)
        return _failed()
    if not result.valid or result.score is None:
        _log.warning("referee could not score the session: %s", result.details.get("reason"))
        return _failed()
    score = float(result.score)
    return {
        "score": score,
        "valid": True,
        "acc": 1.0 if score >= 1.0 else 0.0,
        "referee_failed": 0.0,
        "turns": len(result.turns),
    }
