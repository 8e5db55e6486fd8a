"""OpenRLHF's and slime's remote reward model calls, exactly as those trainers send them, on a
real server: OpenRLHF ``--reward.remote_url`` posts ``{"query", "prompts", "labels"}`` and reads
``{"rewards", "scores", "extra_logs"}``; slime ``--rm-url`` posts ``{"prompt", "response",
"label"}`` and reads the JSON body as the reward."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from typing import Any as Server

import httpx
import pytest

PROMPT = "<|im_start|>user\nWhat is 3+4?<|im_end|>\n<|im_start|>assistant\n"


def openrlhf_body(responses: list[str], labels: list[Any]) -> dict[str, Any]:
    """What openrlhf/utils/agent.py sends: query = prompt + response with special tokens."""
    return {
        "query": [PROMPT + r for r in responses],
        "prompts": [PROMPT] * len(responses),
        "labels": labels,
    }


@pytest.mark.parametrize("path", ["/openrlhf/reward", "/get_reward"])
def test_openrlhf_remote_reward(server: Server, path: str) -> None:
    body = openrlhf_body(
        ["3+4 is \\boxed{7}<|im_end|>", "It is \\boxed{8}.<|im_end|><|endoftext|>", "7"],
        ["7", "7", "7"],
    )
    response = httpx.post(server.url + path, json=body, timeout=60)
    assert response.status_code == 200, response.text
    out = response.json()
    assert set(out) == {"rewards", "scores", "extra_logs"}
    assert out["rewards"] == [1.0, 0.0, 1.0]
    assert out["scores"] == [1.0, 0.0, 1.0]
    assert out["extra_logs"] == {"referee_failed": [0.0] * 3, "referee_valid": [1.0] * 3}


def test_openrlhf_one_sample_per_request_and_no_prompts(server: Server) -> None:
    # the single-turn path sends one sample; older versions send no prompts
    out = httpx.post(
        server.url + "/openrlhf/reward",
        json={"query": ["The answer: \\boxed{\\frac{1}{2}}"], "labels": ["0.5"]},
        timeout=60,
    ).json()
    assert out["rewards"] == [1.0]


def test_openrlhf_grader_in_path_and_query(server: Server) -> None:
    body = openrlhf_body(["The answer is (C).", "I pick B"], ["C", "C"])
    out = httpx.post(server.url + "/openrlhf/reward/multiple_choice", json=body, timeout=60)
    assert out.json()["rewards"] == [1.0, 0.0]
    grader = json.dumps({"type": "string_check", "operation": "ilike"})
    body = openrlhf_body(["Paris", "Lyon"], ["paris", "paris"])
    out = httpx.post(
        server.url + "/openrlhf/reward", params={"grader": grader}, json=body, timeout=60
    )
    assert out.json()["rewards"] == [1.0, 0.0]


def test_openrlhf_bad_requests_say_what_is_wrong(server: Server) -> None:
    body = openrlhf_body(["\\boxed{7}", "\\boxed{7}"], ["7"])
    response = httpx.post(server.url + "/openrlhf/reward", json=body, timeout=30)
    assert response.status_code == 422
    assert "1 labels for 2 queries" in response.json()["detail"]
    body = openrlhf_body(["\\boxed{7}"], ["7"])
    response = httpx.post(
        server.url + "/openrlhf/reward", params={"grader": "{oops"}, json=body, timeout=30
    )
    assert response.status_code == 422 and "grader" in response.json()["detail"]
    response = httpx.post(server.url + "/openrlhf/reward/nonsense", json=body, timeout=30)
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    response = httpx.post(server.url + "/openrlhf/reward", json={"prompts": []}, timeout=30)
    assert response.status_code == 422


def test_slime_remote_reward(server: Server) -> None:
    """slime's rm_hub posts one sample and takes the body as the reward."""
    body = {"prompt": "What is 3+4?", "response": "so \\boxed{7}", "label": "7"}
    response = httpx.post(server.url + "/slime/reward", json=body, timeout=60)
    assert response.status_code == 200
    assert response.json() == 1.0
    body["response"] = "so \\boxed{6}"
    assert httpx.post(server.url + "/slime/reward", json=body, timeout=60).json() == 0.0
    messages = [{"role": "user", "content": "What is 3+4?"}]
    body = {"prompt": messages, "response": "\\boxed{7}", "label": "7", "metadata": {"x": 1}}
    detailed = httpx.post(
        server.url + "/slime/reward", params={"details": "true"}, json=body, timeout=60
    ).json()
    assert detailed["reward"] == 1.0 and detailed["acc"] == 1.0
    assert detailed["outcome"] == "correct"
    mc = {"prompt": "", "response": "(B)", "label": "B"}
    assert httpx.post(server.url + "/slime/reward/multiple_choice", json=mc).json() == 1.0


def test_compat_grader_setting_and_keyless_routes(
    referee_server_factory: Any, tmp_path: Path
) -> None:
    """With API keys set, REFEREE_COMPAT_WITHOUT_API_KEY serves the trainer routes without one
    (neither trainer can send it); REFEREE_COMPAT_GRADER chooses their grader."""
    srv = referee_server_factory(
        tmp_path,
        {
            "REFEREE_API_KEYS": "secret",
            "REFEREE_COMPAT_WITHOUT_API_KEY": "true",
            "REFEREE_COMPAT_GRADER": json.dumps({"type": "multiple_choice", "choices": "ABCDE"}),
            "REFEREE_MATH_WORKERS": "1",
        },
        "compat",
    )
    body = openrlhf_body(["(E)", "(A)"], ["E", "E"])
    out = httpx.post(srv.url + "/openrlhf/reward", json=body, timeout=60)
    assert out.status_code == 200 and out.json()["rewards"] == [1.0, 0.0]
    slime = {"prompt": "", "response": "answer: E", "label": "E"}
    assert httpx.post(srv.url + "/slime/reward", json=slime, timeout=60).json() == 1.0
    # referee's own routes still need the key
    item = {"id": "a", "response": "1", "grader": {"type": "math", "reference": "1"}}
    assert httpx.post(srv.url + "/v1/rewards", json={"items": [item]}).status_code == 401


def test_compat_routes_need_the_key_by_default(referee_server_factory: Any, tmp_path: Path) -> None:
    srv = referee_server_factory(
        tmp_path, {"REFEREE_API_KEYS": "secret", "REFEREE_MATH_WORKERS": "1"}, "keyed"
    )
    body = openrlhf_body(["\\boxed{7}"], ["7"])
    assert httpx.post(srv.url + "/openrlhf/reward", json=body).status_code == 401
    ok = httpx.post(
        srv.url + "/openrlhf/reward",
        json=body,
        headers={"Authorization": "Bearer secret"},
        timeout=60,
    )
    assert ok.status_code == 200 and ok.json()["rewards"] == [1.0]
