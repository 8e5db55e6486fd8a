"""referee's OpenRLHF agent file, loaded and run by OpenRLHF 0.11.2's own code (its released
wheel, cached; see test_openrlhf_slime_peers.py for the stubs): ``_load_agent_executor`` loads
the file as ``--train.agent_func_path`` does, and ``RolloutRayActor.generate_responses`` runs its
``MultiTurnAgentExecutor`` for two prompts at once. Only vLLM's engine is a stand-in: it returns
the canned turns a policy would generate (tool calls in Hermes format for one sample and
Qwen3-Coder's XML for the other, then an answer); the tool outputs come from each sample's own
referee session."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any
from typing import Any as Server

import pytest

from referee.trainer_adapter.tiny_policy import byte_tokenizer

from .test_openrlhf_slime_peers import generate, rollout_actor
from .test_openrlhf_slime_peers import openrlhf as openrlhf  # the module fixture

CALL = '<tool_call>\n{{"name": "python", "arguments": {{"code": "{code}"}}}}\n</tool_call>'
# Qwen3-Coder's chat template: the call as XML inside <tool_call>
CODER_CALL = (
    "<tool_call>\n<function=python>\n<parameter=code>\n{code}\n</parameter>\n</function>\n"
    "</tool_call>"
)
PROMPTS = {
    "<|im_start|>user\nWhat is 6 * 7?<|im_end|>\n<|im_start|>assistant\n": (
        "42",
        [CALL.format(code="x = 6 * 7"), CALL.format(code="x"), "So \\\\boxed{42}"],
    ),
    "<|im_start|>user\nWhat is 2**10?<|im_end|>\n<|im_start|>assistant\n": (
        "1024",
        [CODER_CALL.format(code="x = 2 ** 10"), CODER_CALL.format(code="x + 1"), "\\\\boxed{1025}"],
    ),
}


class Policy:
    """vLLM's ``AsyncLLMEngine.generate`` stand-in: a sample's next canned turn (picked by the
    prompt the context starts with), as token ids ending in the EOS."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.turns = {p: [t.replace("\\\\", "\\") for t in ts] for p, (_, ts) in PROMPTS.items()}
        self.contexts: list[str] = []

    async def generate(
        self, prompt: dict[str, Any], params: Any, request_id: str
    ) -> AsyncIterator[Any]:
        text = self.tokenizer.decode(prompt["prompt_token_ids"], skip_special_tokens=True)
        self.contexts.append(text)
        [start] = [p for p in self.turns if text.startswith(p)]
        response = self.turns[start].pop(0)
        ids = [*self.tokenizer(response, add_special_tokens=False)["input_ids"]]
        await asyncio.sleep(0)
        out = SimpleNamespace(token_ids=ids, text=response, finish_reason="stop", logprobs=None)
        yield SimpleNamespace(outputs=[out])


@pytest.fixture()
def referee_env(server: Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REFEREE_URL", server.url)
    monkeypatch.setenv("REFEREE_SESSION_ENV", "python")
    monkeypatch.setenv("REFEREE_MAX_TURNS", "6")
    yield


def test_openrlhf_multi_turn_executor_runs_sessions(
    openrlhf: SimpleNamespace, referee_env: None
) -> None:
    from referee.trainer_adapter import openrlhf_agent

    executor = openrlhf.engine._load_agent_executor(openrlhf_agent.__file__)
    assert isinstance(executor, openrlhf.agent.MultiTurnAgentExecutor)
    tokenizer = byte_tokenizer()
    policy = Policy(tokenizer)
    actor = rollout_actor(openrlhf, executor, policy)
    samples = {p: (label, 1) for p, (label, _) in PROMPTS.items()}
    first, second = asyncio.run(generate(actor, tokenizer, samples, max_length=4096))
    assert first["reward"] == 1.0 and second["reward"] == 0.0  # 1025 is not 2**10
    for out in (first, second):
        assert len(out["action_ranges"]) == 3  # two tool turns and the answer
        assert out["extra_logs"] == {"referee_valid": 1.0, "referee_failed": 0.0, "turns": 3.0}
    # each sample saw its own interpreter's output, in the context OpenRLHF built
    final_first = max((c for c in policy.contexts if "6 * 7" in c), key=len)
    final_second = max((c for c in policy.contexts if "2**10" in c), key=len)
    assert "<tool_response>\n42\n</tool_response>" in final_first
    assert "<tool_response>\n1025\n</tool_response>" in final_second
    assert all(not turns for turns in policy.turns.values())


def test_parse_tool_calls_skips_unreadable_ones(openrlhf: SimpleNamespace) -> None:
    from referee.trainer_adapter.openrlhf_agent import parse_tool_calls

    text = '<tool_call>{"name": "python", "arguments": {"code": "1"}}</tool_call> <tool_call>{oops'
    text += '</tool_call><tool_call>["no"]</tool_call>'
    assert parse_tool_calls(text) == [
        {
            "id": "call_0",
            "type": "function",
            "function": {"name": "python", "arguments": {"code": "1"}},
        }
    ]


def test_parse_tool_calls_reads_other_formats_and_floods_at_once(openrlhf: SimpleNamespace) -> None:
    from referee.trainer_adapter.openrlhf_agent import parse_tool_calls

    kimi = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.python:0"
        '<|tool_call_argument_begin|>{"code": "1 + 1"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    for text in (CODER_CALL.format(code="1 + 1"), kimi, "<think>x</think>" + kimi):
        [call] = parse_tool_calls(text)
        assert call["function"] == {"name": "python", "arguments": {"code": "1 + 1"}}
    # an answer that holds JSON or a Python call is an answer
    assert parse_tool_calls('The result: {"name": "python", "arguments": {}}') == []
    assert parse_tool_calls("Call python(code='1') to check.") == []
    for flood in ("<tool_call>{" * 100_000, "<tool_call>\n<function=python>" * 50_000):
        assert len(parse_tool_calls(flood)) <= 64


def test_referee_unreachable_ends_the_sample_as_failed(
    openrlhf: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No server: the sample ends at its first step with reward 0, flagged for masking."""
    from referee.trainer_adapter import openrlhf_agent

    monkeypatch.setenv("REFEREE_URL", "http://127.0.0.1:9")
    agent = openrlhf_agent.AgentInstance()
    agent.client.max_retries = 0  # fail at once (the SDK would back off and retry)

    async def run() -> dict[str, Any]:
        await agent.reset({"observation": "What is 1 + 1?", "label": "2"})
        return dict(await agent.step({"action_text": "\\boxed{2}", "label": "2"}))

    out = asyncio.run(run())
    assert out["done"] is True and out["rewards"].item() == 0.0
    assert out["extra_logs"] == {"referee_valid": 0.0, "referee_failed": 1.0, "turns": 0.0}
