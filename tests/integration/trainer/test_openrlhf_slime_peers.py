"""OpenRLHF's and slime's reward clients against a real referee server.

- OpenRLHF 0.11.2, its released wheel (PyPI, cached): ``RolloutRayActor.generate_responses``
  (openrlhf/trainer/ray/vllm_engine.py) runs ``SingleTurnAgentExecutor.execute``
  (openrlhf/utils/agent.py) for the n samples of a prompt at once, each posting its one sample to
  ``--reward.remote_url`` with its own aiohttp code. Only vLLM's engine is a stand-in (it returns
  the canned response tokens a policy would generate); ``ray`` and ``vllm`` are absent here and
  stubbed with the few names the module reads at import (``ray.remote``, ``ray.util``'s placement
  names, ``vllm.inputs.TokensPrompt``, ``vllm.utils.random_uuid``). The tokenizer is transformers'
  byte tokenizer: decoding keeps ``<|im_end|>`` and ``</s>`` in the query, as OpenRLHF's does.
- slime is not on PyPI (the ``slime`` there is an unrelated 0.0.0 package), so its code cannot be
  pinned and fetched here; its request is built exactly as ``slime/rollout/rm_hub/__init__.py``
  ``remote_rm`` builds it (THUDM/slime 624b824a): one aiohttp ``POST {"prompt", "response",
  "label"}`` per sample on a shared session (64 connections), ``raise_for_status``, the JSON body
  as the reward, all samples of a batch gathered at once, the EOS text kept in the response.

Both routes must give the rewards ``/v1/rewards`` gives the same samples.
"""

from __future__ import annotations

import asyncio
import functools
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any
from typing import Any as Server

import aiohttp
import httpx
import pytest

from referee.trainer_adapter.tiny_policy import byte_tokenizer

from .peer_code_compat import load_by_path, peer_package, stub_modules

OPENRLHF_VERSION = "0.11.2"
PROMPT = "<|im_start|>user\nJanet has 8 apples and buys 64 more. How many?<|im_end|>\n"
PROMPT += "<|im_start|>assistant\n"
ANSWERS = [
    "8 + 64 = 72.\n#### 72<|im_end|>",
    "She has 72 apples. The final answer is 72<|im_end|>",
    "So \\boxed{72}<|im_end|><|endoftext|>",
    "8 + 64 = 96.\n#### 96<|im_end|>",
    "I am not sure<|im_end|>",
]


@pytest.fixture(scope="module")
def openrlhf() -> Iterator[SimpleNamespace]:
    root = peer_package("openrlhf", OPENRLHF_VERSION)
    stubs: dict[str, dict[str, object]] = {
        "ray": {"remote": lambda cls: cls},
        "ray.util": {},
        "ray.util.placement_group": {"placement_group": None},
        "ray.util.scheduling_strategies": {"PlacementGroupSchedulingStrategy": None},
        "vllm": {},
        "vllm.inputs": {"TokensPrompt": dict},
        "vllm.utils": {"random_uuid": lambda: uuid.uuid4().hex},
    }
    with stub_modules(**stubs):
        agent = load_by_path(root, "openrlhf.utils.agent")
        engine = load_by_path(root, "openrlhf.trainer.ray.vllm_engine")
    yield SimpleNamespace(agent=agent, engine=engine, root=root)


class Policy:
    """Stands in for vLLM's ``AsyncLLMEngine.generate``: the next canned response of a prompt,
    as token ids ending in the tokenizer's EOS (what a policy that stopped normally returns)."""

    def __init__(self, tokenizer: Any, answers: dict[str, list[str]]) -> None:
        self.tokenizer = tokenizer
        self.answers = {k: list(v) for k, v in answers.items()}

    async def generate(
        self, prompt: dict[str, Any], params: Any, request_id: str
    ) -> AsyncIterator[Any]:
        text = self.tokenizer.decode(prompt["prompt_token_ids"], skip_special_tokens=True)
        response = self.answers[text].pop(0)
        ids = self.tokenizer(response, add_special_tokens=False)["input_ids"]
        ids = [*ids, self.tokenizer.eos_token_id]
        await asyncio.sleep(0)
        out = SimpleNamespace(token_ids=ids, text=response, finish_reason="stop", logprobs=None)
        yield SimpleNamespace(outputs=[out])


def rollout_actor(openrlhf: SimpleNamespace, executor: Any, llm: Any) -> Any:
    """OpenRLHF's rollout actor without its vLLM start-up (``__init__`` builds the engine): its
    agent ``executor`` and ``llm``, a stand-in for vLLM's engine (test_openrlhf_agent.py's too)."""
    cls = openrlhf.engine.RolloutRayActor
    actor = cls.__new__(cls)
    actor.executor = executor
    actor.llm = llm
    actor._mm_pad_token_ids = None
    return actor


async def generate(
    actor: Any, tokenizer: Any, samples: dict[str, tuple[str, int]], max_length: int
) -> list[dict[str, Any]]:
    """``generate_responses`` for every prompt at once, as OpenRLHF's rollout does (``samples``:
    prompt -> its label and how many samples): the outputs, prompt by prompt."""
    params = SimpleNamespace(max_tokens=512, logprobs=None)
    respond = functools.partial(
        actor.generate_responses,
        sampling_params=params,
        max_length=max_length,
        hf_tokenizer=tokenizer,
    )
    groups = await asyncio.gather(
        *(respond(prompt=p, label=label, num_samples=n) for p, (label, n) in samples.items())
    )
    return [o for group in groups for o in group]


async def _rollout(
    openrlhf: SimpleNamespace, url: str, prompts: dict[str, tuple[str, list[str]]]
) -> list[dict[str, Any]]:
    tokenizer = byte_tokenizer()
    policy = Policy(tokenizer, {p: answers for p, (_label, answers) in prompts.items()})
    actor = rollout_actor(openrlhf, openrlhf.agent.SingleTurnAgentExecutor(url), policy)
    samples = {p: (label, len(answers)) for p, (label, answers) in prompts.items()}
    outputs = await generate(actor, tokenizer, samples, max_length=2048)
    for out in outputs:  # the response OpenRLHF trains on, read back from its tokens
        start, end = out["action_ranges"][0]
        out["response_text"] = tokenizer.decode(out["observation_tokens"][start:end])
    return outputs


def _reference_rewards(
    server: Server, samples: list[tuple[str, str, str]], grader: dict[str, Any]
) -> list[dict[str, Any]]:
    """What ``/v1/rewards`` gives (prompt, response, reference) samples, grouped by prompt."""
    items = [
        {
            "id": str(n),
            "prompt": prompt,
            "response": response,
            "grader": {**grader, "reference": reference},
            "group": prompt,
        }
        for n, (prompt, response, reference) in enumerate(samples)
    ]
    out = httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=120)
    assert out.status_code == 200, out.text
    rewards: list[dict[str, Any]] = out.json()["rewards"]
    return rewards


def test_openrlhf_single_turn_rewards_equal_v1_rewards(
    openrlhf: SimpleNamespace, server: Server
) -> None:
    prompts = {
        PROMPT: ("72", ANSWERS),
        PROMPT.replace("8 apples", "9 apples"): ("73", ["#### 73<|im_end|>", "#### 72<|im_end|>"]),
        "<|im_start|>user\nA broken row<|im_end|>\n": ("\\frac{", ["#### 1<|im_end|>"]),
    }
    outputs = asyncio.run(_rollout(openrlhf, server.url + "/openrlhf/reward", prompts))
    assert len(outputs) == 8
    broken = outputs.pop()  # a bad reference: 0 and failed, in OpenRLHF's extra_logs
    assert broken["reward"] == [0.0] and broken["extra_logs"]["referee_failed"] == [1.0]
    assert broken["extra_logs"]["referee_valid"] == [0.0]
    # the query OpenRLHF posted kept the special tokens: the EOS of the policy is in it
    assert all(o["response_text"].endswith("</s>") for o in outputs)
    samples = [(o["prompt"], o["response_text"], o["label"]) for o in outputs]
    reference = _reference_rewards(server, samples, {"type": "math"})
    assert [o["reward"] for o in outputs] == [[r["score"]] for r in reference]
    by_response = {o["response_text"]: o["reward"][0] for o in outputs}
    assert by_response["8 + 64 = 72.\n#### 72<|im_end|></s>"] == 1.0
    assert by_response["She has 72 apples. The final answer is 72<|im_end|></s>"] == 1.0
    assert by_response["8 + 64 = 96.\n#### 96<|im_end|></s>"] == 0.0
    assert sorted((o["reward"][0] for o in outputs), reverse=True) == [1.0] * 4 + [0.0] * 3
    assert all(o["extra_logs"]["referee_failed"] == [0.0] for o in outputs)
    assert all(o["extra_logs"]["referee_valid"] == [1.0] for o in outputs)


def test_openrlhf_under_its_load_64_concurrent_samples(
    openrlhf: SimpleNamespace, server: Server
) -> None:
    """8 prompts x 8 samples, all dispatched at once as OpenRLHF's samples generator does (one
    ``generate_responses`` per prompt, the n samples of each gathered): 64 requests at a time."""
    prompts = {}
    for k in range(8):
        prompt = f"<|im_start|>user\nWhat is {k} + 64?<|im_end|>\n<|im_start|>assistant\n"
        answers = [
            f"So the answer is \\boxed{{{k + 64 + (j % 3 == 0)}}}<|im_end|>" for j in range(8)
        ]
        prompts[prompt] = (str(k + 64), answers)
    outputs = asyncio.run(_rollout(openrlhf, server.url + "/openrlhf/reward", prompts))
    assert len(outputs) == 64
    samples = [(o["prompt"], o["response_text"], o["label"]) for o in outputs]
    reference = _reference_rewards(server, samples, {"type": "math"})
    assert [o["reward"] for o in outputs] == [[r["score"]] for r in reference]
    assert sum(o["reward"][0] for o in outputs) == 8 * 5  # j = 0, 3, 6 are off by one
    assert all(o["extra_logs"]["referee_valid"] == [1.0] for o in outputs)


def test_openrlhf_group_grader_fails_each_sample_it_cannot_group(
    openrlhf: SimpleNamespace, server: Server
) -> None:
    """OpenRLHF sends one sample per request: a majority vote over a group of one is no score.
    ``/v1/rewards`` with the whole group gives the real vote."""
    grader = json.dumps({"type": "majority_vote"})
    url = f"{server.url}/openrlhf/reward?grader={grader}"
    responses = ["#### 72", "#### 72", "#### 72", "#### 96"]
    outputs = asyncio.run(_rollout(openrlhf, url, {PROMPT: ("", responses)}))
    assert [o["reward"] for o in outputs] == [[0.0]] * 4
    assert [o["extra_logs"]["referee_failed"] for o in outputs] == [[1.0]] * 4
    assert [o["extra_logs"]["referee_valid"] for o in outputs] == [[0.0]] * 4
    items = [
        {"id": str(n), "response": r, "grader": {"type": "majority_vote"}, "group": "g"}
        for n, r in enumerate(responses)
    ]
    whole = httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=60).json()
    assert [r["score"] for r in whole["rewards"]] == [1.0, 1.0, 1.0, 0.0]
    one = httpx.post(server.url + "/v1/rewards", json={"items": items[:1]}, timeout=60).json()
    [alone] = one["rewards"]
    assert alone["valid"] is False and alone["details"]["outcome"] == "group_too_small"
    assert "group has one" in alone["details"]["error"]


# slime: its rm_hub remote_rm, request for request (see the module docstring).


def slime_sample(prompt: str, response: str, label: str) -> SimpleNamespace:
    return SimpleNamespace(prompt=prompt, response=response, label=label)


async def slime_remote_rm(
    session: aiohttp.ClientSession, rm_url: str, sample: SimpleNamespace
) -> Any:
    payload = {"prompt": sample.prompt, "response": sample.response, "label": sample.label}
    async with session.post(rm_url, json=payload) as resp:
        resp.raise_for_status()
        return await resp.json()


async def slime_batched_rm(rm_url: str, samples: list[SimpleNamespace]) -> list[Any]:
    connector = aiohttp.TCPConnector(limit=64, enable_cleanup_closed=True)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        return list(await asyncio.gather(*(slime_remote_rm(session, rm_url, s) for s in samples)))


SLIME_RESPONSES = [  # slime's default keeps the EOS text (--rollout-skip-special-tokens off)
    ("The final answer is 0.75<|im_end|>", "0.75"),
    ("#### 72<|im_end|>", "72"),
    ("#### 72<|im_end|><|endoftext|><|endoftext|>", "72"),
    ("Answer: \\boxed{\\frac{3}{4}}<|eot_id|>", "0.75"),
    ("So it is 12.<｜end▁of▁sentence｜>", "12"),
    ("#### 71<|im_end|>", "72"),
    ("#### 72</s><pad><pad>", "72"),
    ("#### 72<end_of_turn><eos>", "72"),
]


@pytest.mark.parametrize("grader", [None, {"type": "math", "extract": "auto"}])
def test_slime_remote_rm_rewards_equal_v1_rewards(
    server: Server, grader: dict[str, Any] | None
) -> None:
    samples = [slime_sample("What is it?", r, label) for r, label in SLIME_RESPONSES]
    url = server.url + "/slime/reward"
    if grader is not None:
        url += "?grader=" + json.dumps(grader)
    rewards = asyncio.run(slime_batched_rm(url, samples))
    reference = _reference_rewards(
        server, [(s.prompt, s.response, s.label) for s in samples], grader or {"type": "math"}
    )
    assert rewards == [r["score"] for r in reference]
    assert rewards == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]


def test_slime_strips_end_tokens_for_every_grader(server: Server) -> None:
    """Not only math reads past the EOS text: an exact string check must too."""
    grader = json.dumps({"type": "string_check", "operation": "eq"})
    samples = [slime_sample("Capital?", "Paris<|im_end|>", "Paris")]
    samples.append(slime_sample("Capital?", "Paris<|eot_id|><|end_of_text|>", "Paris"))
    samples.append(slime_sample("Capital?", "Lyon<|im_end|>", "Paris"))
    assert asyncio.run(slime_batched_rm(f"{server.url}/slime/reward?grader={grader}", samples)) == [
        1.0,
        1.0,
        0.0,
    ]


def test_slime_details_carry_valid(server: Server) -> None:
    url = server.url + "/slime/reward?details=true"
    good, bad, group = asyncio.run(
        slime_batched_rm(
            url,
            [
                slime_sample("q", "#### 72<|im_end|>", "72"),
                slime_sample("q", "#### 72<|im_end|>", "\\frac{"),  # a bad reference
                slime_sample("q", "#### 72<|im_end|>", "72"),
            ],
        )
    )
    assert good["reward"] == 1.0 and good["valid"] is True
    assert bad["reward"] == 0.0 and bad["valid"] is False
    assert bad["outcome"] == "bad_reference"
    vote = json.dumps({"type": "majority_vote"})
    [alone] = asyncio.run(
        slime_batched_rm(
            f"{server.url}/slime/reward?details=true&grader={vote}",
            [slime_sample("q", "#### 72", "")],
        )
    )
    assert alone["valid"] is False and alone["outcome"] == "group_too_small"
    assert group["valid"] is True
