"""Run inside veRL 0.9.1's environment (peer_code_compat.verl_python): referee's session tool
driven by veRL's own code, print what veRL saw.

    python verl_tool_run.py SPEC.json   ->  JSON on stdout

SPEC: ``referee_url``, ``yaml`` (where to write the tool YAML), ``tokenizer_dir`` (an empty
folder for the byte tokenizer the reward manager decodes with).

1. The YAML written by ``referee.trainer_adapter.verl_tool`` from the server's schemas, read by
   veRL's ``initialize_tools_from_config``.
2. Two trajectories at once through veRL's own ``ToolAgentLoop._call_tool`` (a ``create``,
   ``execute`` and ``release`` per call, on veRL's ``AgentData``), each setting and then reading
   a variable: each must see its own interpreter, across calls.
3. veRL's reward loop ``naive`` manager on each trajectory's decoded answer, with the
   trajectory's ``extra_fields`` as ``tool_extra_fields`` and referee's reward function loaded by
   veRL's ``get_custom_reward_fn``; plus a trajectory that called no tool.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any


def _tool_loop(tools: list[Any]) -> Any:
    """veRL's ToolAgentLoop with only what ``_call_tool`` reads (its __init__ needs a server
    manager and a tokenizer of a real rollout)."""
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

    loop = ToolAgentLoop.__new__(ToolAgentLoop)
    loop.tools = {t.name: t for t in tools}
    loop.max_tool_response_length = 4096
    loop.tool_response_truncate_side = "middle"
    return loop


def _data(prompt: str, response: str, ground_truth: str, extra: dict[str, Any],
          fields: dict[str, Any] | None, tokenizer: Any) -> Any:  # fmt: skip
    import numpy as np
    import torch
    from verl import DataProto

    p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    a = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    pad = tokenizer.pad_token_id
    non_tensors: dict[str, Any] = {
        "data_source": np.array(["referee"], dtype=object),
        "reward_model": np.array([{"ground_truth": ground_truth}], dtype=object),
        "extra_info": np.array([dict(extra)], dtype=object),
    }
    if fields is not None:
        non_tensors["tool_extra_fields"] = np.array([fields], dtype=object)
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([p]),
            "responses": torch.tensor([a + [pad] * 3]),
            "input_ids": torch.tensor([p + a + [pad] * 3]),
            "attention_mask": torch.tensor([[1] * (len(p) + len(a)) + [0] * 3]),
        },
        non_tensors=non_tensors,
    )


async def _trajectory(loop: Any, row: dict[str, Any], codes: list[str]) -> dict[str, Any]:
    from verl.experimental.agent_loop.tool_agent_loop import AgentData
    from verl.experimental.agent_loop.tool_parser import FunctionCall

    tools_kwargs = row["extra_info"]["tools_kwargs"]
    agent = AgentData(
        messages=[{"role": "user", "content": row["prompt"]}],
        image_data=None,
        video_data=None,
        audio_data=None,
        mm_processor_kwargs=None,
        metrics={},
        request_id=uuid.uuid4().hex,
        tools_kwargs=tools_kwargs,
    )
    outputs = []
    for code in codes:
        call = FunctionCall(name="python", arguments=json.dumps({"code": code}))
        response, _reward, _metrics = await loop._call_tool(call, tools_kwargs, agent)
        outputs.append(response.text)
    return {"outputs": outputs, "extra_fields": agent.extra_fields, "request_id": agent.request_id}


def main() -> None:
    spec = json.loads(open(sys.argv[1]).read())
    import verl
    from omegaconf import OmegaConf
    from transformers import ByT5Tokenizer
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.tools.tool_registry import initialize_tools_from_config
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from referee.trainer_adapter import verl_session_reward
    from referee.trainer_adapter.verl_tool import tool_config

    url = spec["referee_url"]
    with open(spec["yaml"], "w") as f:
        json.dump(tool_config(url, "python", max_turns=8), f, indent=2)
    tools = initialize_tools_from_config(spec["yaml"])
    loop = _tool_loop(tools)
    out: dict[str, Any] = {
        "verl_version": verl.__version__,
        "tools": [t.tool_schema.model_dump(exclude_none=True) for t in tools],
        "classes": [type(t).__module__ + "." + type(t).__name__ for t in tools],
    }

    def row(prompt: str, reference: str) -> dict[str, Any]:
        task = {"prompt": prompt, "reference": reference}
        return {
            "prompt": prompt,
            "extra_info": {"tools_kwargs": {"python": {"create_kwargs": task}}},
        }

    rows = [row("What is 6 * 7?", "42"), row("What is 2**10?", "1024")]

    async def rollouts() -> list[dict[str, Any]]:
        return await asyncio.gather(
            _trajectory(loop, rows[0], ["x = 6 * 7", "x", "y"]),
            _trajectory(loop, rows[1], ["x = 2 ** 10", "x"]),
        )

    from verl.utils.ray_utils import get_event_loop

    event_loop = get_event_loop()
    trajectories = event_loop.run_until_complete(rollouts())
    out["trajectories"] = trajectories

    ByT5Tokenizer(extra_ids=0).save_pretrained(spec["tokenizer_dir"])
    tokenizer = ByT5Tokenizer.from_pretrained(spec["tokenizer_dir"])
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": verl_session_reward.__file__,
                    "name": "compute_score",
                    "reward_kwargs": {"env": "python", "referee_url": url},
                }
            }
        }
    )
    manager = NaiveRewardManager(config, tokenizer, get_custom_reward_fn(config))
    cases = [
        (rows[0], "So the answer is \\boxed{42}", trajectories[0]["extra_fields"]),
        (rows[1], "The answer is \\boxed{1000}", trajectories[1]["extra_fields"]),
        (rows[0], "Without tools: \\boxed{42}", None),  # no tool called: no session yet
    ]

    async def rewards() -> list[dict[str, Any]]:
        return [
            await manager.run_single(
                _data(r["prompt"], text, r["extra_info"]["tools_kwargs"]["python"]
                      ["create_kwargs"]["reference"], r["extra_info"], fields, tokenizer)
            )
            for r, text, fields in cases
        ]  # fmt: skip

    out["rewards"] = event_loop.run_until_complete(rewards())
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
