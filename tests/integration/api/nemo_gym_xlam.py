"""Run inside NeMo Gym 0.7.0's environment (nemo_gym_peer.nemo_gym_python): NeMo Gym's own
xlam_fc resources server (``resources_servers/xlam_fc/app.py`` of the installed wheel, built by
its own classes) and referee's ``/nemo-gym/{env}/verify`` score the same rows and responses.

The cases: the wheel's own example rollouts (``data/example_rollouts.jsonl``: Qwen3-30B-A3B's
responses, each with the reward NeMo Gym recorded) with their rows' ``expected_answers``
(``data/example.jsonl``), and responses made from a row's expected calls, changed the ways a
model gets a call wrong or right. Every request is validated by xlam_fc's own request model.
argv: referee's url, the output path (a JSON list of ``[case, xlam_fc's reward, recorded or
None, referee's status, referee's reward]``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import httpx
import resources_servers
from nemo_gym.server_utils import ServerClient

HERE = Path(next(iter(resources_servers.__path__))) / "xlam_fc"  # a namespace package
spec = importlib.util.spec_from_file_location("xlam_fc_app", HERE / "app.py")
assert spec and spec.loader
xlam = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = xlam
spec.loader.exec_module(xlam)


def _call(name: str, arguments: Any, k: int) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "call_id": f"call_{k}", "name": name, "arguments": text}


def _response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp", "created_at": 0.0, "model": "policy", "object": "response",
        "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }  # fmt: skip


def _said(text: str) -> dict[str, Any]:
    return {
        "id": "msg", "type": "message", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }  # fmt: skip


def cases() -> list[tuple[str, dict[str, Any], float | None]]:
    rows = [json.loads(x) for x in (HERE / "data/example.jsonl").read_text().splitlines()]
    by_prompt = {json.dumps(r["responses_create_params"]["input"][-1]["content"]): r for r in rows}
    out: list[tuple[str, dict[str, Any], float | None]] = []
    for line in (HERE / "data/example_rollouts.jsonl").read_text().splitlines():
        rollout = json.loads(line)
        asked = json.dumps(rollout["responses_create_params"]["input"][-1]["content"])
        row = by_prompt[asked]
        body = {**row, "response": rollout["response"]}
        out.append((f"rollout {row['id']}", body, float(rollout["reward"])))
    for row in rows:
        want = row["expected_answers"]
        name = f"row {row['id']}"

        def add(
            case: str, output: list[dict[str, Any]], row: dict[str, Any] = row, name: str = name
        ) -> None:
            out.append((f"{name}: {case}", {**row, "response": _response(output)}, None))

        exact = [_call(c["name"], c["arguments"], k) for k, c in enumerate(want)]
        add("the expected calls", exact)
        add("the calls, then words", [*exact, _said("Here you are.")])
        add("words, then the calls", [_said("Let me look that up."), *exact])
        add("reversed", exact[::-1])
        add("one left out", exact[:-1])
        add("one more", [*exact, _call(want[0]["name"], want[0]["arguments"], 9)])
        add("words only", [_said(json.dumps(want))])
        add("arguments not JSON", [_call(c["name"], "{oops", k) for k, c in enumerate(want)])
        add(
            "another name",
            [_call(c["name"] + "_v2", c["arguments"], k) for k, c in enumerate(want)],
        )
        extra = [
            _call(c["name"], {**c["arguments"], "verbose": True}, k) for k, c in enumerate(want)
        ]
        add("an argument more", extra)
        for k, c in enumerate(want):
            for key, value in c["arguments"].items():
                changed = [dict(x) for x in want]
                if isinstance(value, bool):
                    continue
                if isinstance(value, int):
                    changed[k]["arguments"] = {**c["arguments"], key: float(value)}
                    add(
                        f"{key} as a float",
                        [_call(x["name"], x["arguments"], j) for j, x in enumerate(changed)],
                    )
                    changed[k]["arguments"] = {**c["arguments"], key: str(value)}
                    add(
                        f"{key} as text",
                        [_call(x["name"], x["arguments"], j) for j, x in enumerate(changed)],
                    )
                elif isinstance(value, str):
                    changed[k]["arguments"] = {**c["arguments"], key: value.upper() + "x"}
                    add(
                        f"{key} changed",
                        [_call(x["name"], x["arguments"], j) for j, x in enumerate(changed)],
                    )
                without = {a: b for a, b in c["arguments"].items() if a != key}
                changed[k]["arguments"] = without
                add(
                    f"{key} left out",
                    [_call(x["name"], x["arguments"], j) for j, x in enumerate(changed)],
                )
    return out


async def main(url: str, path: str) -> None:
    config = xlam.XlamFcResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", name="")
    server = xlam.XlamFcResourcesServer(config=config, server_client=MagicMock(spec=ServerClient))
    results = []
    with httpx.Client(base_url=f"{url}/nemo-gym/python", timeout=120) as client:
        for case, body, recorded in cases():
            request = xlam.XlamFcVerifyRequest.model_validate(body)
            theirs = (await server.verify(request)).reward
            r = client.post("/verify", json=request.model_dump(mode="json"))
            ours = r.json().get("reward") if r.status_code == 200 else r.text
            results.append([case, theirs, recorded, r.status_code, ours])
    Path(path).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
