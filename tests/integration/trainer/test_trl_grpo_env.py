"""TRL 1.16's own GRPOTrainer, two steps, with a referee session class as its
``environment_factory``: every rollout opens a python session on the server (``reset``), and the
reward TRL logs is the one ``get_reward`` (the session's verification) returned.

The tokenizer carries TRL's own Qwen2.5 chat template (Hermes ``<tool_call>`` format), which TRL
requires for tools. The tiny policy's text is random, so its FIRST turn is scripted (a wrapper
around ``generate``): an even-numbered completion calls ``answer`` with the right sum, an odd one
with a wrong sum, in the Hermes format; TRL parses the call, runs the tool on the session and
generates the next turn with the real (random) policy. So half the rollouts earn 1 from referee,
the other half 0, and TRL logs a mean of 0.5 each step."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.trainer_adapter.trl_env import PythonSession

# transformers 5 renames gradient to activation checkpointing and TRL still reads the old name
pytestmark = pytest.mark.filterwarnings("ignore:.*will be removed in v6:FutureWarning")


def session_opens(server: Any) -> float:
    metrics = httpx.get(server.url + "/metrics", timeout=10).text
    found = re.findall(
        r'referee_http_requests_total\{method="POST",route="/v1/sessions",status="20\d"\} (\S+)',
        metrics,
    )
    return sum(float(v) for v in found)


def test_grpo_trainer_runs_two_steps_on_referee_sessions(
    tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer  # type: ignore[attr-defined]

    from referee.trainer_adapter.tiny_policy import tiny_policy, tool_tokenizer

    torch.set_num_threads(1)
    tokenizer = tool_tokenizer()
    model = tiny_policy(tokenizer)
    model.config.max_position_embeddings = 4096
    real_generate = model.generate

    def scripted_generate(input_ids: Any, attention_mask: Any = None, **kwargs: Any) -> Any:
        texts = tokenizer.batch_decode(input_ids, skip_special_tokens=True)
        if any("<tool_response>" in t for t in texts):  # later turns: the policy itself
            return real_generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        calls = []
        for i, text in enumerate(texts):
            a, b = map(int, re.findall(r"What is (\d)\+(\d)\?", text)[-1])
            answer = a + b if i % 2 == 0 else a + b + 1
            body = json.dumps({"name": "answer", "arguments": {"answer": f"\\boxed{{{answer}}}"}})
            call = f"<tool_call>\n{body}\n</tool_call>"
            calls.append(tokenizer(call, add_special_tokens=True)["input_ids"])
        width = max(map(len, calls))
        tail = torch.tensor([c + [tokenizer.pad_token_id] * (width - len(c)) for c in calls])
        return torch.cat([input_ids, tail], dim=1)

    model.generate = scripted_generate
    rows = [
        {"prompt": [{"role": "user", "content": f"What is {a}+{b}?"}], "reference": str(a + b)}
        for a, b in [(1, 2), (3, 4)]
    ]
    before = session_opens(server)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        environment_factory=partial(PythonSession, str(server.url), max_turns=4),
        train_dataset=Dataset.from_list(rows),
        args=GRPOConfig(
            output_dir=str(tmp_path / "out"),
            max_steps=2,
            per_device_train_batch_size=4,
            num_generations=2,
            max_completion_length=8,
            max_tool_calling_iterations=1,
            learning_rate=1e-4,
            logging_steps=1,
            report_to="none",
            use_cpu=True,
            bf16=False,
            seed=0,
            save_strategy="no",
            activation_checkpointing=False,
        ),
    )
    trainer.train()
    logs = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logs) == 2
    # one session per rollout: 2 steps x 4 completions
    assert session_opens(server) - before == 8
    for h in logs:
        assert h["tools/call_frequency"] == 1.0 and h["tools/failure_frequency"] == 0.0
        assert h["reward"] == 0.5
        assert h["rewards/PythonSession/mean"] == 0.5
    # TRL pools one instance per rollout of a batch; closing them closes their last sessions
    pool: list[Any] = [env for envs in trainer._environment_pool.values() for env in envs]
    assert len(pool) == 4 and all(isinstance(env, PythonSession) for env in pool)
    open_ids = [env._session_id for env in pool]
    assert all(open_ids)
    for env in pool:
        env._release()
    for sid in open_ids:
        state = httpx.get(f"{server.url}/v1/sessions/{sid}", timeout=10).json()
        assert state["state"] == "closed" and state["reason"] == "closed by the caller"
        assert state["turns"] == 1  # the scripted answer was a step of this session
