"""Run inside NeMo Gym 0.7.0's environment (nemo_gym_peer.nemo_gym_python): the shipped
resources server (integrations/nemo_gym/resources_servers/referee/app.py, loaded by path) built
by NeMo Gym's own classes, driven through the app NeMo Gym builds (its session middleware and
signed cookie), its bodies validated by NeMo Gym's own models, its session lifecycle by NeMo
Gym's own conformance check. argv: referee's url, a url where nothing listens, the output path."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import sys
from pathlib import Path
from unittest.mock import MagicMock

import httpx
from fastapi.testclient import TestClient
from nemo_gym.base_resources_server import (
    BaseVerifyResponse,
    ResourcesSeedSessionRequest,
    ResourcesSeedSessionResponse,
)
from nemo_gym.episode_types import EpisodeId, TaskId
from nemo_gym.failure_kinds import validate_failure_kind
from nemo_gym.openai_utils import NeMoGymResponse
from nemo_gym.server_utils import ServerClient
from nemo_gym.testing.session_conformance import check_resources_session_contract

ROOT = Path(__file__).resolve().parents[3]
APP = ROOT / "integrations/nemo_gym/resources_servers/referee/app.py"
spec = importlib.util.spec_from_file_location("referee_nemo_gym_app", APP)
assert spec and spec.loader
app_module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = app_module
spec.loader.exec_module(app_module)

ROW = json.loads((APP.parent / "data/example.jsonl").read_text().splitlines()[0])


def server(url: str, env: str = "python") -> TestClient:
    config = app_module.RefereeResourcesServerConfig(
        host="127.0.0.1", port=0, entrypoint="app.py", name="referee",
        referee_url=url, referee_env=env,
    )  # fmt: skip
    built = app_module.RefereeResourcesServer(
        config=config, server_client=MagicMock(spec=ServerClient)
    )
    return TestClient(built.setup_webserver(), raise_server_exceptions=False)


def response(text: str) -> dict:
    return NeMoGymResponse(
        id="resp", created_at=0, model="policy", object="response", parallel_tool_calls=True,
        tool_choice="auto", tools=[],
        output=[{"id": "msg", "type": "message", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": text, "annotations": []}]}],
    ).model_dump(mode="json")  # fmt: skip


async def concurrent_seeds(url: str, seed: ResourcesSeedSessionRequest) -> list:
    built = server(url)
    body = seed.model_copy(update={"resources_session_id": "res-4"}).model_dump(mode="json")
    transport = httpx.ASGITransport(app=built.app)

    async def seed_then_tool(delay: float) -> list:
        async with httpx.AsyncClient(transport=transport, base_url="http://gym") as c:
            await asyncio.sleep(delay)
            seeded = await c.post("/seed_session", json=body)
            tool = await c.post("/python", json={"code": "print(6 * 7)"})
            return [seeded.status_code, tool.status_code, tool.text.strip()]

    before = seeds_opened(url)
    first, second = await asyncio.gather(seed_then_tool(0), seed_then_tool(0.01))
    return [first, second, seeds_opened(url) - before]


def seeds_opened(url: str) -> float:
    """referee's count of sessions opened through its NeMo Gym seed route (its /metrics)."""
    metrics = httpx.get(url + "/metrics", timeout=30).text
    found = re.findall(
        r'referee_http_requests_total\{method="POST",route="/nemo-gym/\{env\}/seed_session",'
        r'status="200"\} (\S+)',
        metrics,
    )
    return sum(float(v) for v in found)


def main() -> None:
    url, dead, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    result: dict = {}
    client = server(url)
    # the legacy flow, as Simple Agent's /run drives it: seed with the row, tools, verify
    seeded = client.post("/seed_session", json=ROW)
    assert seeded.status_code == 200, seeded.text
    assert "RefereeResourcesServer___referee" in seeded.cookies, dict(seeded.cookies)
    first = client.post("/python", json={"code": "x = 2**10 - 24"})
    second = client.post("/python", json={"code": "print(x)"})
    result["tool_output"] = second.text
    bad = client.post("/python", json={"cod": 1})
    result["bad_arguments"] = [bad.status_code, bad.text]
    assert first.status_code == 200, first.text
    right = client.post("/verify", json={**ROW, "response": response("So \\boxed{1000}.")})
    assert right.status_code == 200, right.text
    verified = BaseVerifyResponse.model_validate(right.json())
    result["right"] = verified.model_dump(mode="json", include={"reward", "mask_sample"})
    echoed = right.json()
    result["echo"] = [
        echoed.get("expected_answer"),
        "response" in echoed,
        "reward_components" in echoed,
    ]
    closed = client.post("/close_session", json={})
    result["closed"] = closed.status_code
    after = client.post("/python", json={"code": "print(x)"})
    result["after_close"] = after.text

    # a verify without a seeded session (reverify): referee opens one from the row
    fresh = server(url)
    wrong = fresh.post("/verify", json={**ROW, "response": response("\\boxed{999}")})
    result["wrong"] = BaseVerifyResponse.model_validate(wrong.json()).reward
    result["reverify_mode"] = fresh.get("/reverify_mode").json()

    # an Environment Server's typed seed and close: NeMo Gym's own conformance check
    episode = EpisodeId(rollout_id="rollout-1", attempt=0)
    seed = ResourcesSeedSessionRequest(
        resources_session_id="res-1", episode_id=episode,
        task_id=TaskId(taskset="example", task_id="0"), task_data=ROW,
    )  # fmt: skip
    checked = server(url)
    check_resources_session_contract(checked.app, seed, keeps_state=True)
    typed = server(url)
    got = typed.post(
        "/seed_session",
        json=seed.model_copy(update={"resources_session_id": "res-2"}).model_dump(mode="json"),
    )
    assert got.status_code == 200, got.text
    ResourcesSeedSessionResponse.model_validate(got.json())
    result["typed_tool"] = typed.post("/python", json={"code": "print(6 * 7)"}).text

    # the same typed seed twice at once (a retried seed): the second waits for the first's
    # session, so a tool call right after it finds the session; one referee session for both
    result["concurrent"] = asyncio.run(concurrent_seeds(url, seed))

    # bad input gets a clear 4xx, never NeMo Gym's bare 500
    bad = server(url)
    late = checked.post("/seed_session", json=seed.model_dump(mode="json"))  # closed by the check
    not_json = bad.post("/seed_session", content=b"{", headers={"content-type": "application/json"})
    half = bad.post("/seed_session", json={"resources_session_id": "res-3"})
    no_session = bad.post("/python", json={"code": "1"})
    result["bad_input"] = [
        [r.status_code, r.text[:200]] for r in (late, not_json, half, no_session)
    ]

    # referee down: a tool says so, the sample is masked, never a reward of the model
    gone = server(dead)
    result["down_seed"] = gone.post("/seed_session", json=ROW).status_code
    down = gone.post("/verify", json={**ROW, "response": response("\\boxed{1000}")})
    masked = BaseVerifyResponse.model_validate(down.json())
    result["down"] = masked.model_dump(
        mode="json", include={"reward", "mask_sample", "failure_kind"}
    )
    result["down_kind_known"] = validate_failure_kind(masked.failure_kind) == masked.failure_kind

    # a row referee cannot use: seed_session fails, with referee's reason
    refused = server(url).post("/seed_session", json={**ROW, "seed": "x"})
    result["refused"] = [refused.status_code, refused.text[:300]]
    metrics = client.post(
        "/aggregate_metrics",
        json={
            "verify_responses": [
                {**right.json(), "_ng_task_index": 0, "_ng_rollout_index": 0},
                {**wrong.json(), "_ng_task_index": 0, "_ng_rollout_index": 1},
            ]
        },
    )
    assert metrics.status_code == 200, metrics.text
    result["metrics"] = metrics.json()
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
