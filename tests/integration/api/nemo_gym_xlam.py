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
import json
import sys
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

from nemo_gym.server_utils import ServerClient
from nemo_gym_servers import call, load_app, response, said, score_both, server_folder

HERE = server_folder("xlam_fc")
xlam = load_app("xlam_fc")


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
            out.append((f"{name}: {case}", {**row, "response": response(output)}, None))

        exact = [call(c["name"], c["arguments"], k) for k, c in enumerate(want)]
        add("the expected calls", exact)
        add("the calls, then words", [*exact, said("Here you are.")])
        add("words, then the calls", [said("Let me look that up."), *exact])
        add("reversed", exact[::-1])
        add("one left out", exact[:-1])
        add("one more", [*exact, call(want[0]["name"], want[0]["arguments"], 9)])
        add("words only", [said(json.dumps(want))])
        add("arguments not JSON", [call(c["name"], "{oops", k) for k, c in enumerate(want)])
        add(
            "another name",
            [call(c["name"] + "_v2", c["arguments"], k) for k, c in enumerate(want)],
        )
        extra = [
            call(c["name"], {**c["arguments"], "verbose": True}, k) for k, c in enumerate(want)
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
                        [call(x["name"], x["arguments"], j) for j, x in enumerate(changed)],
                    )
                    changed[k]["arguments"] = {**c["arguments"], key: str(value)}
                    add(
                        f"{key} as text",
                        [call(x["name"], x["arguments"], j) for j, x in enumerate(changed)],
                    )
                elif isinstance(value, str):
                    changed[k]["arguments"] = {**c["arguments"], key: value.upper() + "x"}
                    add(
                        f"{key} changed",
                        [call(x["name"], x["arguments"], j) for j, x in enumerate(changed)],
                    )
                without = {a: b for a, b in c["arguments"].items() if a != key}
                changed[k]["arguments"] = without
                add(
                    f"{key} left out",
                    [call(x["name"], x["arguments"], j) for j, x in enumerate(changed)],
                )
    return out


async def main(url: str, path: str) -> None:
    config = xlam.XlamFcResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", name="")
    server = xlam.XlamFcResourcesServer(config=config, server_client=MagicMock(spec=ServerClient))
    made = cases()
    scored = await score_both(url, server, xlam.XlamFcVerifyRequest, [c[:2] for c in made])
    results = [
        [case, theirs, c[2], status, ours]
        for c, (case, theirs, status, ours) in zip(made, scored, strict=True)
    ]
    Path(path).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
