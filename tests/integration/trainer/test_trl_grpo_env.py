"""TRL 1.16's own GRPOTrainer, two steps, with a referee session class as its
``environment_factory``: every rollout opens a python session on the server (``reset``), and the
reward TRL logs is the one ``get_reward`` (the session's verification) returned.

The tokenizer carries TRL's own Qwen2.5 chat template (Hermes ``<tool_call>`` format), which TRL
requires for tools. The tiny policy's text is random, so its FIRST turn is scripted (a wrapper
around ``generate``): an even-numbered completion calls ``answer`` with the right sum, an odd one
with a wrong sum, in the Hermes format; TRL parses the call, runs the tool on the session and
generates the next turn with the real (random) policy. The fourth rollout of each batch answers
``gone``, and its session is closed on the server before its reward, as the server's reaper
would: ``get_reward`` is None and TRL leaves that rollout out. So each step has rewards
1, 0, 1 and None, and TRL logs 2/3 (were None taken as 0, 0.5). ``CloseSessions`` closes the last
session of every instance when training ends."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from referee.trainer_adapter.trl_env import CloseSessions, PythonSession

# transformers 5 renames gradient to activation checkpointing and TRL still reads the old name
pytestmark = pytest.mark.filterwarnings("ignore:.*will be removed in v6:FutureWarning")


def session_opens(server: Any) -> float:
    metrics = httpx.get(server.url + "/metrics", timeout=10).text
    found = re.findall(
        r'referee_http_requests_total\{method="POST",route="/v1/sessions",status="20\d"\} (\S+)',
        metrics,
    )
    return sum(float(v) for v in found)


class RecordedSession(PythonSession):
    """A python session that records the ids it opened, and whose session vanishes on the
    server when the model answers ``gone`` (what the reaper does to an idle session)."""

    opened: ClassVar[list[str]] = []

    def reset(self, **row: Any) -> str | None:
        observation = super().reset(**row)
        assert self._session_id is not None
        RecordedSession.opened.append(self._session_id)
        return observation

    def answer(self, answer: str) -> str:
        if "gone" in answer:
            self._client.close_session(self._sid())  # closed on the server; the id is kept
            return "recorded"
        return super().answer(answer)


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
            answer: Any = a + b if i % 2 == 0 else a + b + 1
            if i == 3:
                answer = "gone"
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
        environment_factory=partial(RecordedSession, str(server.url), max_turns=4),
        callbacks=[CloseSessions()],
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
    RecordedSession.opened.clear()
    trainer.train()
    logs = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logs) == 2
    # one session per rollout: 2 steps x 4 completions
    assert session_opens(server) - before == 8
    assert len(RecordedSession.opened) == 8
    for h in logs:
        assert h["tools/call_frequency"] == 1.0 and h["tools/failure_frequency"] == 0.0
        assert h["reward"] == pytest.approx(2 / 3)
        assert h["rewards/RecordedSession/mean"] == pytest.approx(2 / 3)
    # every session is closed: each rollout's by the next reset of its instance, the "gone" ones
    # by the test, and the last four (TRL keeps its instances) by CloseSessions at train end
    for n, sid in enumerate(RecordedSession.opened):
        state = httpx.get(f"{server.url}/v1/sessions/{sid}", timeout=10).json()
        assert state["state"] == "closed" and state["reason"] == "closed by the caller", state
        assert state["turns"] == (0 if n % 4 == 3 else 1)  # "gone" took no step
