"""The vllm backend's parts that need no GPU: request shaping, the conversion of vLLM's outputs,
the engine thread that batches callers, the lazy import and its error.

vLLM's ``CompletionOutput`` and ``Logprob`` are stood in for by plain objects with the same fields
(index, text, token_ids, logprobs as ``[{token_id: Logprob(logprob, rank, decoded_token)}]``,
finish_reason): the conversion's corner cases (a label outside the top-k, a missing position) are
set up here exactly. The real engine runs in tests/gpu (``pytest -m gpu``)."""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.genrm.backend import SamplingParams, StructuredOutput
from referee.genrm.local_model import (
    PRESETS,
    build_tokenizer,
    parameter_count,
    write_local_model,
)
from referee.genrm.vllm_backend import (
    EngineThread,
    PrepareCaches,
    Prepared,
    RequestPlan,
    VLLMBackend,
    VLLMUnavailable,
    label_token_ids,
    plan_request,
    prepare_request,
    shape_prompt,
    to_completions,
)
from referee.services.app import build_judge
from referee.services.settings import Settings


@dataclass
class Logprob:  # vllm.logprobs.Logprob's fields
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class Output:  # vllm.outputs.CompletionOutput's fields that referee reads
    index: int
    text: str
    token_ids: list[int]
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = "length"


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return build_tokenizer(512)


# -- the lazy import ------------------------------------------------------------------------------


def test_import_needs_no_vllm_and_construction_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # as if vLLM were not installed
    with pytest.raises(VLLMUnavailable, match=r"pip install 'referee\[vllm\]'"):
        VLLMBackend("/models/judge")
    settings = Settings(judge_backend="vllm", judge_model="/models/judge")
    with pytest.raises(VLLMUnavailable, match=r"referee\[vllm\]"):
        build_judge(settings)


def test_vllm_options_are_read_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_JUDGE_BACKEND", "vllm")
    monkeypatch.setenv("REFEREE_JUDGE_VLLM_OPTIONS", '{"max_model_len": 8192, "dtype": "bfloat16"}')
    settings = Settings()
    assert settings.judge_backend == "vllm"
    assert settings.judge_vllm_options == {"max_model_len": 8192, "dtype": "bfloat16"}


# -- request shaping ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "supported", "expected", "copies"),
    [
        # greedy: vLLM refuses n > 1, so one decode is returned n times
        (SamplingParams(n=3), True, {"n": 1, "temperature": 0.0, "top_p": 1.0}, 3),
        (SamplingParams(n=4, temperature=0.7, top_p=0.9, seed=5), True,
         {"n": 4, "temperature": 0.7, "top_p": 0.9, "seed": 5}, 1),
        (SamplingParams(stop=("\n\n", "END")), True, {"stop": ["\n\n", "END"]}, 1),
        (SamplingParams(logprobs=True), True, {"logprobs": 0}, 1),
        (SamplingParams(label_tokens=("Yes", "No")), True, {"logprob_token_ids": [7, 9]}, 1),
        (SamplingParams(label_tokens=("Yes", "No")), False, {"logprobs": 20}, 1),
        (SamplingParams(top_logprobs=5, label_tokens=("Yes", "No")), True, {"logprobs": 5}, 1),
        (SamplingParams(top_logprobs=50), True, {"logprobs": 20}, 1),
    ],
)  # fmt: skip
def test_plan_request(
    params: SamplingParams, supported: bool, expected: dict[str, Any], copies: int
) -> None:
    labels = {"Yes": 9, "No": 7} if params.label_tokens else {}
    plan = plan_request(params, labels, token_ids_supported=supported, max_logprobs=20)
    assert plan.copies == copies
    assert plan.sampling["max_tokens"] == params.max_tokens
    for key, value in expected.items():
        assert plan.sampling[key] == value, key
    asked = {"logprobs", "logprob_token_ids"} & set(plan.sampling)
    assert len(asked) <= 1  # vLLM wants logprobs == len(logprob_token_ids) when both are set
    if not (params.logprobs or params.label_tokens or params.top_logprobs):
        assert not asked
    assert plan.structured is None


def test_plan_request_structured_outputs_and_bad_input() -> None:
    regex = SamplingParams(structured=StructuredOutput("regex", r"\[RESULT\] (Yes|No)"))
    assert plan_request(regex, {}, token_ids_supported=True).structured == {
        "regex": r"\[RESULT\] (Yes|No)"
    }
    choice = SamplingParams(structured=StructuredOutput("choice", ["A", "B"]))
    assert plan_request(choice, {}, token_ids_supported=True).structured == {"choice": ["A", "B"]}
    with pytest.raises(ValueError, match="max_tokens"):
        plan_request(SamplingParams(max_tokens=0), {}, token_ids_supported=True)


def test_label_token_ids_are_the_first_token_of_each_label(tokenizer: Any) -> None:
    ids = label_token_ids(tokenizer, ("Yes", "No", "Yessir"))
    for label, tid in ids.items():
        assert tid == tokenizer.encode(label, add_special_tokens=False)[0]
    assert ids["Yes"] != ids["No"]
    with pytest.raises(ValueError, match="no token"):
        label_token_ids(tokenizer, ("",))


def test_shape_prompt_text_and_chat(tokenizer: Any) -> None:
    assert shape_prompt(tokenizer, "2 + 2 =") == "2 + 2 ="
    chat = [{"role": "user", "content": "Is 2 + 2 = 4?"}]
    shaped = shape_prompt(tokenizer, chat)
    assert isinstance(shaped, dict)
    rendered = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert rendered.endswith("<|assistant|>\n")
    assert shaped["prompt_token_ids"] == tokenizer.encode(rendered, add_special_tokens=False)
    assert tokenizer.decode(shaped["prompt_token_ids"]) == rendered

    from transformers import ByT5Tokenizer  # no chat template: role-tagged text

    assert shape_prompt(ByT5Tokenizer(), chat) == "user: Is 2 + 2 = 4?\nassistant:"


# -- result conversion ----------------------------------------------------------------------------


def _names(tid: int) -> str:
    return f"t{tid}"


def test_to_completions_logprobs_labels_and_top_k() -> None:
    positions = [
        {  # first position: chosen token 5 (rank 2), top-3 = 4, 5, 6; label 9 is not among them
            5: Logprob(-0.9, 2, "b"),
            4: Logprob(-0.7, 1, "a"),
            6: Logprob(-2.0, 3, "c"),
            7: Logprob(-3.0, 4, "d"),
        },
        {8: Logprob(-0.1, 1, "e")},
    ]
    out = Output(0, "be", [5, 8], positions, "stop")
    params = SamplingParams(logprobs=True, top_logprobs=3, label_tokens=("A", "B"))
    plan = plan_request(params, {"A": 4, "B": 9}, token_ids_supported=True)
    [c] = to_completions([out], params, plan, _names)
    assert c.text == "be" and c.finish_reason == "stop" and c.tokens == 2
    assert c.token_logprobs == (-0.9, -0.1)
    assert c.label_logprobs == {"A": -0.7, "B": -math.inf}
    assert list(c.first_top_logprobs or {}) == ["t4", "t5", "t6"]  # by rank, k of them
    assert c.first_top_logprobs == {"t4": -0.7, "t5": -0.9, "t6": -2.0}


def test_to_completions_copies_order_and_missing_positions() -> None:
    params = SamplingParams(n=3, logprobs=True, label_tokens=("Yes",))
    plan = plan_request(params, {"Yes": 1}, token_ids_supported=True)
    assert plan.copies == 3
    one = Output(0, "x", [3, 4], [{3: Logprob(-1.0), 1: Logprob(-2.5)}])  # position 2 missing
    [a, b, c] = to_completions([one], params, plan, _names)
    assert a is b is c
    assert a.token_logprobs == (-1.0, -math.inf)
    assert a.label_logprobs == {"Yes": -2.5}
    assert a.first_top_logprobs is None

    sampled = SamplingParams(n=2, temperature=1.0)
    plan = plan_request(sampled, {}, token_ids_supported=True)
    outs = [Output(1, "second", [2], None), Output(0, "first", [1], None)]
    texts = [c.text for c in to_completions(outs, sampled, plan, _names)]
    assert texts == ["first", "second"]

    # logprobs asked but none returned: None, not a row of -inf; no token: no label either
    params = SamplingParams(logprobs=True, label_tokens=("Yes",))
    plan = plan_request(params, {"Yes": 1}, token_ids_supported=True)
    [c] = to_completions([Output(0, "x", [3], None)], params, plan, _names)
    assert c.token_logprobs is None and c.label_logprobs is None
    [empty] = to_completions([Output(0, "", [], [])], params, plan, _names)
    assert empty.tokens == 0 and empty.token_logprobs == () and empty.label_logprobs is None


@dataclass
class RequestOutput:  # vllm.outputs.RequestOutput: one per prompt, its n completions in .outputs
    outputs: list[Output]


def test_prepare_request_end_to_end_on_a_real_tokenizer(tokenizer: Any) -> None:
    chat = [{"role": "user", "content": "Is 2 + 2 = 4?"}]
    params = SamplingParams(n=2, max_tokens=4, logprobs=True, label_tokens=("Yes", "No"))
    caches = PrepareCaches()
    prep = prepare_request(
        tokenizer,
        ["2 + 2 =", chat],
        params,
        make_params=lambda plan: plan,  # the backend builds vllm.SamplingParams(**plan.sampling)
        token_ids_supported=True,
        caches=caches,
    )
    assert prep.prompts[0] == "2 + 2 =" and isinstance(prep.prompts[1], dict)
    plan = prep.params[0]
    assert isinstance(plan, RequestPlan) and prep.params == [plan, plan]
    yes, no = (tokenizer.encode(t, add_special_tokens=False)[0] for t in ("Yes", "No"))
    assert plan.sampling["logprob_token_ids"] == sorted({yes, no}) and plan.copies == 2
    assert caches.labels[("Yes", "No")] == {"Yes": yes, "No": no}

    def output(text: str) -> RequestOutput:
        ids = tokenizer.encode(text, add_special_tokens=False)
        first = {ids[0]: Logprob(-0.5), yes: Logprob(-1.5), no: Logprob(-2.5)}
        rest = [{t: Logprob(-0.25)} for t in ids[1:]]
        return RequestOutput([Output(0, text, ids, [first, *rest], "length")])

    rows = prep.finish([output("Yes it is"), output("No")])
    assert [len(r) for r in rows] == [2, 2]  # greedy: one decode, n copies
    first = rows[0][0]
    assert first.text == "Yes it is" and first.label_logprobs == {"Yes": -1.5, "No": -2.5}
    assert first.token_logprobs is not None and len(first.token_logprobs) == first.tokens
    assert rows[1][0].tokens == len(tokenizer.encode("No", add_special_tokens=False))

    top = prepare_request(
        tokenizer, ["x"], SamplingParams(top_logprobs=1), make_params=lambda p: p,
        token_ids_supported=True, caches=caches,
    )  # fmt: skip
    [[c]] = top.finish([RequestOutput([Output(0, "Yes", [yes], [{yes: Logprob(-0.1, 1)}])])])
    assert c.first_top_logprobs == {tokenizer.convert_ids_to_tokens([yes])[0]: -0.1}
    assert caches.token_text[yes] == tokenizer.convert_ids_to_tokens([yes])[0]


# -- the engine thread ----------------------------------------------------------------------------


class Recorder:
    """An 'engine' that upper-cases prompts, records each batch, and can hold the first batch
    until the test has queued more requests behind it."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.first_started = threading.Event()
        self.threads: set[str] = set()
        self.closed = False

    def prepare(self, engine: Recorder, request: list[str]) -> Prepared[list[str]]:
        if "unpreparable" in request:
            raise ValueError("cannot prepare this request")
        return Prepared(list(request), [None] * len(request), lambda outs: list(outs))

    def run(self, engine: Recorder, prompts: list[str], params: list[Any]) -> list[str]:
        self.threads.add(threading.current_thread().name)
        self.batches.append(list(prompts))
        if len(self.batches) == 1:
            self.first_started.set()
            assert self.gate.wait(30)
        if "bad" in prompts:
            raise RuntimeError("the engine rejects 'bad'")
        return [p.upper() for p in prompts]


def test_engine_thread_coalesces_requests_queued_behind_a_batch() -> None:
    rec = Recorder()
    engine = EngineThread(lambda: rec, rec.prepare, rec.run, name="test-engine")
    first = engine.submit(["a"])
    assert rec.first_started.wait(30)
    later = [engine.submit(["b", "c"]), engine.submit(["d"])]
    rec.gate.set()
    assert first.result(30) == ["A"]
    assert [f.result(30) for f in later] == [["B", "C"], ["D"]]
    assert rec.batches == [["a"], ["b", "c", "d"]]  # the two queued requests: one engine call
    assert engine.batches == 2 and engine.requests == 3
    assert rec.threads == {"test-engine"}
    assert engine.call(lambda e: threading.current_thread().name) == "test-engine"
    engine.close(30)
    with pytest.raises(RuntimeError, match="closed"):
        engine.submit(["e"])


def test_engine_thread_fails_only_the_request_that_breaks() -> None:
    rec = Recorder()
    engine = EngineThread(lambda: rec, rec.prepare, rec.run, close=lambda e: None)
    hold = engine.submit(["hold"])
    assert rec.first_started.wait(30)
    good, bad, unprepared = (
        engine.submit(["x", "y"]),
        engine.submit(["bad"]),
        engine.submit(["unpreparable"]),
    )
    rec.gate.set()
    assert hold.result(30) == ["HOLD"]
    assert good.result(30) == ["X", "Y"]
    with pytest.raises(RuntimeError, match="rejects 'bad'"):
        bad.result(30)
    with pytest.raises(ValueError, match="cannot prepare"):
        unprepared.result(30)
    # the failed combined batch was retried request by request
    assert rec.batches[1:] == [["x", "y", "bad"], ["x", "y"], ["bad"]]
    engine.close(30)


def test_engine_thread_build_failure_is_raised_and_close_hook_runs() -> None:
    def broken() -> Recorder:
        raise OSError("no GPU here")

    rec = Recorder()
    with pytest.raises(OSError, match="no GPU"):
        EngineThread(broken, rec.prepare, rec.run)

    def mark_closed(e: Recorder) -> None:
        e.closed = True

    rec.gate.set()
    engine = EngineThread(lambda: rec, rec.prepare, rec.run, close=mark_closed)
    assert engine.submit(["q"]).result(30) == ["Q"]
    engine.close(30)
    assert rec.closed


# -- the local model for GPU tests and benchmarks -------------------------------------------------


@pytest.mark.slow  # about 2 s: writes and loads a model
def test_local_model_is_written_and_loads(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = write_local_model(tmp_path / "tiny", "tiny")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    assert model.config.vocab_size == len(tok)
    assert sum(p.numel() for p in model.parameters()) == parameter_count(PRESETS["tiny"], len(tok))
    assert tok.eos_token_id is not None and tok.chat_template
    text = "What is 2 + 2? [RESULT] Yes é"
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text

    bare = write_local_model(tmp_path / "bare", "tiny", weights=False)
    assert (bare / "config.json").is_file() and not list(bare.glob("*.safetensors"))
    assert 100e6 <= parameter_count(PRESETS["bench"]) <= 500e6
