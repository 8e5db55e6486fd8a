"""The embedded referee of ``referee train grpo`` without ``--server``: the real app under
uvicorn on a free loopback port, in a thread of the training process, stopped at the end."""

from __future__ import annotations

import httpx
import pytest

from referee.trainer_adapter.embedded import embedded_referee
from referee.trainer_adapter.trl import reward_function


def test_embedded_server_scores_over_http_and_stops() -> None:
    with embedded_referee(math_workers=1) as url:
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(url + "/readyz", timeout=30).status_code == 200
        reward = reward_function(url, {"type": "math"})
        try:
            out = reward(
                prompts=["1+1?", "1+1?"],
                completions=["\\boxed{2}", "\\boxed{3}"],
                completion_ids=[[1], [1]],
                answer=["2", "2"],
            )
        finally:
            reward.close()
        assert out == [1.0, 0.0]
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/healthz", timeout=2)
