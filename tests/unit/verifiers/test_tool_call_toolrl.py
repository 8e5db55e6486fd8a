"""`tool_call`'s ToolRL scores agree with ToolRL's reward as veRL ships it (tests/toolrl_peer.py).

ToolRL's data writes the ground truth as its model's answer: ``<think>…</think>`` then a
``<tool_call>`` block of JSON calls, one a line (``{"name", "parameters"}``). Here reference call
sets are generated (one to three calls, of zero to three parameters: strings, integers, floats,
lists, objects; some with two calls of one tool) and each is answered in ToolRL's own layout as
it is and mutated: a wrong value, a parameter left out, one added, a wrong name, a call missing,
one added, the calls reversed, a call doubled, an integer written as a float, a number as a
string, no call at all, a block that is not JSON. The ground-truth string is read into the
reference by ``tool_calls_from_value`` (what the trainer adapters do with a row's
ground_truth), then validated as a request's grader is.

Compared: veRL's ``compute_score`` (R_format + R_correct, in [-3, 4]; the response wrapped in the
Qwen chat turn it cuts out) against referee's ``toolrl``, and veRL's correctness reward alone
against referee's ``partial`` (R_correct = 6 * partial - 3). Every score is the peer's except
where ToolRL matches greedily: for each reference call in turn, the best unused call of that
name, so with two reference calls of one tool a call can be taken by the first that the second
fits better; referee finds the best assignment, never a lower score; and where the answer's
block is empty (the one reference call left out): ToolRL's format term reads the layout (1),
referee's the calls read (0), the correctness terms agree. Each such case is recognised by its
cause and counted.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from toolrl_peer import rlla

from referee.client.grader_specs import tool_calls_from_value
from referee.client.models import RewardItem
from referee.verifiers.registry import score_item

TOOLS = ("get_weather", "search", "book_flight", "convert", "send_email")
PARAMS = ("city", "query", "date", "amount", "unit", "tags", "options", "to", "limit")
Call = dict[str, Any]


def _value(rng: random.Random) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice(["Paris", "new york", "2024-05-01", "celsius", "a b c"])
    if kind == 1:
        return rng.randrange(-5, 500)
    if kind == 2:
        return rng.choice([0.5, 2.25, 99.9, -3.5])
    if kind == 3:
        return [rng.randrange(10) for _ in range(rng.randrange(1, 4))]
    if kind == 4:
        return {"k": rng.choice(["x", "y"]), "n": rng.randrange(3)}
    return rng.choice(["yes", "no"])


def _call(rng: random.Random, name: str | None = None) -> Call:
    params = rng.sample(PARAMS, rng.randrange(4))
    return {"name": name or rng.choice(TOOLS), "parameters": {p: _value(rng) for p in params}}


def references(n: int, seed: int = 7) -> list[list[Call]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        calls = [_call(rng) for _ in range(rng.randrange(1, 4))]
        if len(calls) > 1 and rng.random() < 0.3:  # two calls of one tool
            calls[1] = _call(rng, calls[0]["name"])
        out.append(calls)
    return out


def _other(value: Any) -> Any:
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 2 + 1
    if isinstance(value, list):
        return [*value, 7]
    return {**value, "n": value["n"] + 1}


def mutants(calls: list[Call], rng: random.Random) -> dict[str, list[Call] | str]:
    """The model's answers to ``calls``: lists of calls, or raw text for the unreadable ones."""
    first = calls[0]
    params = first["parameters"]

    def with_first(**change: Any) -> list[Call]:
        return [{**first, **change}, *calls[1:]]

    out: dict[str, list[Call] | str] = {
        "same": calls,
        "wrong_name": with_first(name="lookup"),
        "missing_call": calls[1:],
        "extra_call": [*calls, _call(rng)],
        "reversed": calls[::-1],
        "doubled": [*calls, first],
        "added_param": with_first(parameters={**params, "extra": 1}),
        "no_call": "I cannot call a tool for this.",
        "not_json": "<tool_call>\n{name: get_weather}\n</tool_call>",
    }
    if params:
        key = rng.choice(sorted(params))
        out["wrong_value"] = with_first(parameters={**params, key: _other(params[key])})
        out["left_out"] = with_first(parameters={k: v for k, v in params.items() if k != key})
        ints = {k: float(v) for k, v in params.items() if type(v) is int}
        if ints:
            out["int_as_float"] = with_first(parameters={**params, **ints})
        numbers = {k: str(v) for k, v in params.items() if type(v) in (int, float)}
        if numbers:
            out["number_as_string"] = with_first(parameters={**params, **numbers})
    return out


def toolrl_text(calls: list[Call]) -> str:
    """An answer in ToolRL's layout: a think block, then one block of calls, one a line."""
    lines = "\n".join(json.dumps(c) for c in calls)
    return f"<think>I should call the tools.</think>\n<tool_call>\n{lines}\n</tool_call>"


def _referee(reference: str, response: str, scoring: str) -> float:
    calls = tool_calls_from_value(reference)
    assert calls is not None, reference
    grader = {"type": "tool_call", "scoring": scoring, "reference": calls}
    item = RewardItem.model_validate({"id": "x", "response": response, "grader": grader})
    score, details = score_item(item.grader.model_dump(), response)
    assert score is not None, details
    return float(score)


def _greedy_loses(reference: list[Call]) -> bool:
    names = [c["name"] for c in reference]
    return len(set(names)) < len(names)


def _empty_block(response: str) -> bool:
    return (
        "<tool_call>" in response
        and not response.split("<tool_call>")[1].split("</tool_call>")[0].strip()
    )


@pytest.fixture(scope="module")
def peer() -> Any:
    return rlla()


def test_toolrl_scores_equal_verls_reward(peer: Any) -> None:
    rng = random.Random(11)
    compared = greedy = empty = 0
    seen: set[str] = set()
    for reference in references(300):
        truth = toolrl_text(reference)
        for kind, answer in mutants(reference, rng).items():
            response = answer if isinstance(answer, str) else toolrl_text(answer)
            turn = f"<|im_start|>assistant\n{response}<|im_end|>"
            theirs = peer.compute_score("rlla", turn, truth, {"experiment_name": "qwen"})
            correctness = peer.customize_correctness_reward_tool(
                [[{"role": "assistant", "content": response}]], [truth], 0, 3.0, -3.0, False
            )[0]
            ours = _referee(truth, response, "toolrl")
            partial = _referee(truth, response, "partial")
            compared += 1
            seen.add(kind)
            if ours == pytest.approx(theirs["score"], abs=1e-9):
                assert 6 * partial - 3 == pytest.approx(correctness, abs=1e-9), (kind, response)
                continue
            if _empty_block(response):
                # ToolRL's format term reads the layout (a think block, then a tool_call block:
                # 1), referee's the calls (none: 0); the correctness terms agree
                assert ours == theirs["score"] - 1, (kind, response)
                assert 6 * partial - 3 == pytest.approx(correctness, abs=1e-9)
                empty += 1
                continue
            # ToolRL's greedy matching took a call a later reference call fitted better
            assert _greedy_loses(reference) and ours > theirs["score"], (kind, truth, response)
            assert 6 * partial - 3 > correctness
            greedy += 1
    assert compared > 3000 and len(seen) == 13, (compared, seen)
    # the exceptions stay the few they are (seen: 51 greedy, 97 empty blocks of 3,321)
    assert greedy < compared * 0.03 and empty < compared * 0.05, (greedy, empty)


def test_a_toolrl_row_with_no_call_due(peer: Any) -> None:
    """ToolRL's answer with a <response> and no <tool_call>: the reference makes no call."""
    truth = "<think>No tool needed.</think>\n<response>Hello!</response>"
    assert tool_calls_from_value(truth) == []
    assert _referee(truth, "<think>hm</think>\n<response>Hi</response>", "partial") == 1.0
    called = toolrl_text([{"name": "search", "parameters": {"query": "hi"}}])
    assert _referee(truth, called, "partial") == 0.0
