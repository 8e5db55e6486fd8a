"""The ``vllm`` backend and the judges on a real vLLM engine (needs a CUDA GPU and vLLM).

Deselected by default; run with ``pytest -m gpu`` in an environment that has
``pip install -e '.[server,vllm]' pytest pytest-timeout`` (vLLM brings its own torch). The model
is a tiny random Llama with a BPE tokenizer written to a temporary directory
(:func:`referee.genrm.local_model.write_local_model`): nothing is downloaded. The backend is
built the way the server builds it, from ``REFEREE_JUDGE_*`` settings, so the wiring is covered.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.genrm.backend import SamplingParams, StructuredOutput
from referee.genrm.judges import VERDICT_REGEX, JudgeItem
from referee.genrm.local_model import write_local_model

pytestmark = pytest.mark.gpu

CHAT = [{"role": "user", "content": "Is 2 + 2 = 4? Answer Yes or No."}]
ITEMS = [
    JudgeItem("What is 2 + 2?", "4", reference="4"),
    JudgeItem("What is 2 + 3?", "6", reference="5"),
    JudgeItem("Name a prime.", "Seven is prime."),
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_local_model(tmp_path_factory.mktemp("tiny-vllm") / "model", "tiny")


@pytest.fixture(scope="module")
def vllm_backend(model_dir: Path) -> Iterator[Any]:
    from referee.genrm.vllm_backend import VLLMBackend
    from referee.services.app import build_judge
    from referee.services.settings import Settings

    options = {
        "gpu_memory_utilization": 0.3,
        "max_model_len": 2048,
        "enforce_eager": True,
        "dtype": "bfloat16",
        "seed": 0,
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REFEREE_JUDGE_BACKEND", "vllm")
        mp.setenv("REFEREE_JUDGE_MODEL", str(model_dir))
        mp.setenv("REFEREE_JUDGE_VLLM_OPTIONS", json.dumps(options))
        backend = build_judge(Settings())
    assert isinstance(backend, VLLMBackend)
    yield backend
    asyncio.run(backend.close())


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_batches_samples_and_log_probabilities(vllm_backend: Any) -> None:
    assert vllm_backend.name == "vllm"
    assert vllm_backend.token_ids_supported  # the pinned vLLM gives exact label log-probs
    params = SamplingParams(
        max_tokens=8, n=3, temperature=0.9, seed=3, logprobs=True, label_tokens=("Yes", "No")
    )
    out = run(vllm_backend.generate(["2+2=", CHAT], params))
    assert [len(row) for row in out] == [3, 3]
    for row in out:
        for c in row:
            assert 1 <= c.tokens <= 8 and c.token_logprobs is not None
            assert len(c.token_logprobs) == c.tokens
            assert all(lp <= 0 for lp in c.token_logprobs)
            assert c.label_logprobs is not None and set(c.label_logprobs) == {"Yes", "No"}
            assert all(-30 < v < 0 for v in c.label_logprobs.values())
            assert c.finish_reason in ("stop", "length")
    # the same prompt, the same label log-probabilities (they are the model's, not the sample's)
    again = run(vllm_backend.generate(["2+2="], params))
    assert again[0][0].label_logprobs == pytest.approx(out[0][0].label_logprobs, abs=1e-3)


def test_top_logprobs_and_greedy_copies(vllm_backend: Any) -> None:
    top = run(vllm_backend.generate(["hello"], SamplingParams(max_tokens=2, top_logprobs=5)))
    first = top[0][0].first_top_logprobs
    assert first is not None and len(first) == 5
    assert list(first.values()) == sorted(first.values(), reverse=True)
    greedy = run(vllm_backend.generate(["hello", "world"], SamplingParams(max_tokens=6, n=3)))
    assert [len(r) for r in greedy] == [3, 3]
    assert len({c.text for c in greedy[0]}) == 1  # one greedy decode, returned n times
    assert run(vllm_backend.generate(["hello"], SamplingParams(max_tokens=6)))[0][0].text == (
        greedy[0][0].text
    )


def test_label_logprobs_agree_with_transformers_on_the_same_weights(
    vllm_backend: Any, model_dir: Path
) -> None:
    from referee.genrm.transformers_backend import TransformersBackend

    local = TransformersBackend.from_pretrained(str(model_dir))
    params = SamplingParams(max_tokens=1, label_tokens=("Yes", "No"))
    for prompt in ["Is 2 + 2 = 4?\n[RESULT]", "The capital of France is Paris.\n[RESULT]"]:
        [[ours]] = run(vllm_backend.generate([prompt], params))
        [[theirs]] = run(local.generate([prompt], params))
        assert ours.label_logprobs == pytest.approx(theirs.label_logprobs, abs=0.05)


def test_stop_strings_cut_the_text(vllm_backend: Any) -> None:
    [[free]] = run(vllm_backend.generate(["abc"], SamplingParams(max_tokens=24)))
    letters = [ch for ch in free.text[1:] if ch.isascii() and ch.isalnum()]
    assert letters, free.text  # the BPE vocabulary is mostly ASCII words
    stop = letters[0]
    [[cut]] = run(vllm_backend.generate(["abc"], SamplingParams(max_tokens=24, stop=(stop,))))
    assert cut.text == free.text[: free.text.index(stop)]
    assert cut.finish_reason == "stop"


def test_structured_outputs_are_enforced(vllm_backend: Any) -> None:
    choice = SamplingParams(max_tokens=8, structured=StructuredOutput("choice", ["Yes", "No"]))
    regex = SamplingParams(
        max_tokens=16, structured=StructuredOutput("regex", r"\[RESULT\] (Yes|No|[1-9])")
    )
    prompts = [f"Question {k}: is it right?" for k in range(6)]
    for row in run(vllm_backend.generate(prompts, choice)):
        assert row[0].text in ("Yes", "No")
    for row in run(vllm_backend.generate(prompts, regex)):
        assert re.fullmatch(r"\[RESULT\] (Yes|No|[1-9])", row[0].text), row[0].text


def test_concurrent_calls_share_engine_batches(vllm_backend: Any) -> None:
    before = vllm_backend.batches

    async def many() -> list[Any]:
        params = SamplingParams(max_tokens=16)
        return list(
            await asyncio.gather(
                *(vllm_backend.generate([f"{k} + {k} ="], params) for k in range(8))
            )
        )

    results = run(many())
    assert [len(r) for r in results] == [1] * 8
    assert vllm_backend.batches - before < 8  # calls that overlapped went into one generate


def test_judges_on_vllm(vllm_backend: Any) -> None:
    from referee.genrm.judges import Criterion, judge_pairwise, judge_pointwise, judge_rubric

    probs = run(judge_pointwise(vllm_backend, ITEMS, label_probs=True))
    for r in probs:
        assert r.outcome == "judged" and r.score is not None and 0.0 < r.score < 1.0
    assert len({r.score for r in probs}) > 1  # the score comes from the model, per prompt

    guarded = run(judge_pointwise(vllm_backend, [*ITEMS, JudgeItem("q", ":")], max_tokens=16))
    assert guarded[-1].outcome == "guard" and guarded[-1].score == 0.0
    assert all(r.outcome in ("judged", "parse_error") for r in guarded[:-1])

    constrained = run(
        judge_pointwise(vllm_backend, ITEMS, max_tokens=64, samples=2, structured=True)
    )
    for r in constrained:  # a random model rarely reaches the verdict; what it does reach parses
        assert r.outcome in ("judged", "parse_error")
        assert r.outcome != "judged" or set(r.details["verdicts"]) <= {0.0, 1.0}

    criteria = [Criterion("gives the right number", 2), Criterion("is rude", -1)]
    for mode in ("explicit", "implicit"):
        rubric = run(judge_rubric(vllm_backend, ITEMS, criteria, mode=mode, max_tokens=16))
        assert len(rubric) == len(ITEMS)
        assert all(r.outcome in ("judged", "parse_error") for r in rubric)

    pairs = run(judge_pairwise(vllm_backend, "What is 2 + 2?", ["4", "5", "four"], max_tokens=16))
    assert len(pairs) == 3
    for r in pairs:
        assert r.outcome in ("judged", "parse_error")
        assert r.score is None or 0.0 <= r.score <= 1.0


def test_judge_verdict_constraints_hold_in_the_engine(vllm_backend: Any) -> None:
    verdicts = {
        "yes_no": ["Yes", "No"],
        "score": [str(k) for k in range(1, 11)],
        "choice": ["A", "B", "tie"],
    }
    prompts = [f"Judge answer {k}." for k in range(8)]
    for kind, pattern in VERDICT_REGEX.items():
        finals = [f"[RESULT] {v}" for v in verdicts[kind]]
        params = SamplingParams(
            max_tokens=24, temperature=1.0, seed=1, structured=StructuredOutput("regex", pattern)
        )
        for [c] in run(vllm_backend.generate(prompts, params)):
            # a rationale without '[' and then, if reached, a prefix of a verdict line
            _rationale, bracket, tail = c.text.partition("[")
            assert not bracket or any(f.startswith(bracket + tail) for f in finals), c.text
            if c.finish_reason == "stop":
                assert re.fullmatch(pattern, c.text), c.text
