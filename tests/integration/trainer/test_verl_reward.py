"""referee's veRL reward module, loaded and called exactly as veRL does: loaded from its file
path (``custom_reward_function.path``) as ``custom_module``, ``reward_kwargs`` bound as keyword
arguments; the naive manager calls ``compute_score(data_source=, solution_str=, ground_truth=,
extra_info=)`` per sample, the batch manager ``compute_score(data_sources=, solution_strs=,
ground_truths=, extra_infos=, **reward_kwargs)`` with numpy object arrays."""

from __future__ import annotations

import importlib.util
import itertools
import json
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from typing import Any as Server

import numpy as np
import pytest
from prime_code_peer import prime_code
from qa_peer import geo3k_format_reward, math_dapo, search_r1
from toolrl_peer import rlla

from referee.trainer_adapter.verl_path import reward_module_path


@pytest.fixture()
def module() -> Iterator[ModuleType]:
    """verl/trainer/ppo/reward.py ``get_custom_reward_fn``: the file imported by path."""
    spec = importlib.util.spec_from_file_location("custom_module", reward_module_path())
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = mod
    spec.loader.exec_module(mod)
    yield mod
    mod.reset_clients()
    del sys.modules["custom_module"]


def bound(fn: Callable[..., Any], **reward_kwargs: Any) -> Callable[..., Any]:
    """How veRL wraps the function with ``custom_reward_function.reward_kwargs``."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs, **reward_kwargs)

    return wrapped


def test_path_is_the_module_file() -> None:
    assert reward_module_path().endswith("trainer_adapter/verl.py")


def test_naive_manager_per_sample(module: ModuleType, server: Server) -> None:
    score = bound(module.compute_score, referee_url=server.url)
    right = score(
        data_source="openai/gsm8k",
        solution_str="3 + 4 = 7. The answer is \\boxed{7}",
        ground_truth="7",
        extra_info={"split": "train", "index": 0, "num_turns": 1},
    )
    assert right == {"score": 1.0, "valid": True, "acc": 1.0, "referee_failed": 0.0}
    wrong = score(
        data_source="openai/gsm8k",
        solution_str="\\boxed{8}",
        ground_truth="7",
        extra_info={"split": "train", "index": 0},
    )
    assert wrong == {"score": 0.0, "valid": True, "acc": 0.0, "referee_failed": 0.0}
    # the keys are the same whatever happens (veRL stacks them per key)
    assert set(right) == set(wrong)


def test_grader_from_extra_info_and_kwargs(module: ModuleType, server: Server) -> None:
    score = bound(module.compute_score, referee_url=server.url)
    mc = json.dumps({"type": "multiple_choice"})
    out = score(
        data_source="mmlu",
        solution_str="The answer is (B)",
        ground_truth="B",
        extra_info={"index": 3, "grader": mc},
    )
    assert out["score"] == 1.0
    partial = bound(
        module.compute_score,
        referee_url=server.url,
        grader={"type": "string_check", "operation": "ilike"},
    )
    assert partial("x", "PARIS", "paris", None)["score"] == 1.0


def test_batch_manager(module: ModuleType, server: Server) -> None:
    n = 6
    data_sources = np.array(["math"] * n, dtype=object)
    solutions = ["\\boxed{2}", "\\boxed{3}", "\\boxed{2}", "\\boxed{5}", "\\boxed{5}", "\\boxed{6}"]
    truths = ["2", "2", "2", None, None, None]
    extras = np.array(
        [{"index": 0}] * 3 + [{"index": 1, "grader": json.dumps({"type": "majority_vote"})}] * 3,
        dtype=object,
    )
    out = module.compute_score_batch(
        data_sources=data_sources,
        solution_strs=solutions,
        ground_truths=truths,
        extra_infos=extras,
        referee_url=server.url,
    )
    # the rows with no grader are veRL's "math" source: 1 right, -1 wrong, as its math_dapo
    assert [o["score"] for o in out] == [1.0, -1.0, 1.0, 1.0, 1.0, 0.0]
    assert [o["acc"] for o in out] == [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    assert [o["referee_failed"] for o in out] == [0.0] * n


def test_batch_without_extra_info(module: ModuleType, server: Server) -> None:
    out = module.compute_score_batch(
        data_sources=np.array(["a", "b"], dtype=object),
        solution_strs=["\\boxed{1}", "\\boxed{1}"],
        ground_truths=["1", "2"],
        extra_infos=[None, None],
        referee_url=server.url,
    )
    assert [o["score"] for o in out] == [1.0, 0.0]


def test_failures_score_zero_and_are_counted(module: ModuleType, server: Server) -> None:
    bad = json.dumps({"type": "math", "extract": "nonsense"})
    out = module.compute_score_batch(
        data_sources=["m", "m"],
        solution_strs=["\\boxed{1}", "\\boxed{1}"],
        ground_truths=["1", "1"],
        extra_infos=[{"grader": bad}, {}],
        referee_url=server.url,
    )
    assert out == [
        {"score": 0.0, "valid": False, "acc": 0.0, "referee_failed": 1.0},
        {"score": 1.0, "valid": True, "acc": 1.0, "referee_failed": 0.0},
    ]
    down = module.compute_score("m", "\\boxed{1}", "1", None, referee_url="http://127.0.0.1:9")
    assert down == {"score": 0.0, "valid": False, "acc": 0.0, "referee_failed": 1.0}


def test_url_from_the_environment(
    module: ModuleType, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REFEREE_URL", server.url)
    monkeypatch.setenv("REFEREE_GRADER", json.dumps({"type": "multiple_choice"}))
    assert module.compute_score("m", "(C)", "C")["score"] == 1.0


def test_python_grader_reads_the_sample_as_item(module: ModuleType, server: Server) -> None:
    """OpenAI's python grader through veRL's compute_score: `item` is the sample's extra_info
    with its ground_truth and data_source."""
    source = (
        "def grade(sample, item):\n"
        "    ok = sample['output_text'] == item['ground_truth'] and item['split'] == 'train'\n"
        "    return 1.0 if ok and item['data_source'] == 'calc' else 0.0\n"
    )
    score = bound(
        module.compute_score, referee_url=server.url, grader={"type": "python", "source": source}
    )
    assert score("calc", "42", "42", {"split": "train"})["score"] == 1.0
    assert score("calc", "41", "42", {"split": "train"})["score"] == 0.0


def test_spider_samples_name_their_database(
    module: ModuleType, tmp_path: Path, referee_server_factory: Any
) -> None:
    """A Spider sample as veRL's data preprocessing writes one: the gold query as
    ``ground_truth``, ``db_id`` in ``extra_info``; the grader (``{"type": "sql"}``, no database)
    from ``reward_kwargs``; the server's folder holds ``<db_id>/<db_id>.sqlite``."""
    folder = tmp_path / "database"
    (folder / "concert_singer").mkdir(parents=True)
    conn = sqlite3.connect(folder / "concert_singer" / "concert_singer.sqlite")
    conn.executescript("CREATE TABLE singer(age INT); INSERT INTO singer VALUES (30), (40);")
    conn.commit()
    conn.close()
    files = referee_server_factory(tmp_path, {"REFEREE_SQL_DATABASES_DIR": str(folder)}, "sql")
    score = bound(module.compute_score, referee_url=files.url, grader={"type": "sql"})
    extra = {"index": 0, "db_id": "concert_singer", "question": "Average age of singers?"}
    gold = "SELECT avg(age) FROM singer"
    assert (
        score("spider", "```sql\nSELECT sum(age) / 2.0 FROM singer\n```", gold, extra)["score"]
        == 1.0
    )
    assert score("spider", "SELECT max(age) FROM singer", gold, extra)["score"] == 0.0


def test_toolrl_samples_score_as_verls_own_reward(module: ModuleType, server: Server) -> None:
    """ToolRL's rows (veRL's ``rlla`` data): the ground truth is the model's answer as ToolRL
    writes it (a think block, then a ``<tool_call>`` block of JSON calls, one a line); with a
    ``{"type": "tool_call", "scoring": "toolrl"}`` grader the reward equals veRL's own
    ``rlla.compute_score`` (the pinned verl wheel's file), parallel calls included."""
    truth = (
        "<think>Two lookups.</think>\n<tool_call>\n"
        '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}\n'
        '{"name": "search", "parameters": {"query": "louvre hours"}}\n</tool_call>'
    )
    answers = [
        truth,
        truth.replace("celsius", "kelvin"),
        truth.replace('{"name": "search", "parameters": {"query": "louvre hours"}}\n', ""),
        "<think>none</think>\nIt is sunny.",
    ]
    grader = {"type": "tool_call", "scoring": "toolrl"}
    score = bound(module.compute_score, referee_url=server.url, grader=grader)
    for answer in answers:
        theirs = rlla().compute_score(
            "rlla", f"<|im_start|>assistant\n{answer}<|im_end|>", truth, {"experiment_name": "qwen"}
        )
        ours = score("rlla", answer, truth, {"index": 0})
        assert ours["score"] == pytest.approx(theirs["score"]), (answer, ours, theirs)


def test_tool_definitions_in_extra_info(module: ModuleType, server: Server) -> None:
    """A tool-use row in veRL's layout: the calls as ``ground_truth``, the row's tool
    definitions in ``extra_info.tools`` (OpenAI's shape, as a parquet row holds them). The
    definitions fill the grader's ``tools``: a float for a parameter declared integer and an
    argument the tool does not declare are wrong calls, though equal to the reference by value
    or not in it."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "top_k",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "k": {"type": "integer"}},
                    "required": ["query"],
                },
            },
        }
    ]
    truth = json.dumps([{"name": "top_k", "arguments": {"query": "louvre", "k": 3}}])
    score = bound(module.compute_score, referee_url=server.url, grader={"type": "tool_call"})
    extra = {"index": 0, "tools": tools}
    call = '<tool_call>\n{{"name": "top_k", "arguments": {args}}}\n</tool_call>'
    assert (
        score("toolace", call.format(args='{"query": "louvre", "k": 3}'), truth, extra)["score"]
        == 1.0
    )
    assert (
        score("toolace", call.format(args='{"query": "louvre", "k": 3.0}'), truth, extra)["score"]
        == 0.0
    )
    # without the definitions 3.0 is 3 by value
    assert (
        score("toolace", call.format(args='{"query": "louvre", "k": 3.0}'), truth, {"index": 0})[
            "score"
        ]
        == 1.0
    )


def test_programming_sources_score_as_prime_code(
    module: ModuleType, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no grader set anywhere, veRL's programming data sources (codecontests, apps,
    codeforces, taco: ``default_compute_score`` gives them to ``prime_code``) are code rows,
    their ground truth the tests: the score is what veRL's own ``prime_code.compute_score``
    (the pinned wheel's, as ``default_compute_score`` calls it) gives, with solutions that use
    names only its imports give; another source is still a math row."""
    monkeypatch.delenv("REFEREE_GRADER", raising=False)
    score = bound(module.compute_score, referee_url=server.url)
    stdin = json.dumps({"inputs": ["3\n1 2 3\n", "1\n5\n"], "outputs": ["6\n", "5\n"]})
    call = json.dumps({"fn_name": "maxGap", "inputs": ["[1, 5, 2]", "[7]"], "outputs": ["4", "0"]})
    method = "class Solution:\n    def maxGap(self, nums: List[int]) -> int:\n        return "
    answers = [
        (stdin, "input()\nprint(sum(map(int, sys.stdin.readline().split())))"),
        (stdin, "input()\nprint(max(map(int, input().split())))"),
        (stdin, "input()\nprint(sum(deque(map(int, input().split()))) + 0.0000001)"),
        (call, method + "max(nums) - min(nums)\n"),
        (call, method + "max(nums)\n"),  # wrong on both (a partial call row: 0 in prime_code)
        (call, method + "float(max(nums) - min(nums))\n"),
    ]
    seen = set()
    for source, (tests, program) in zip(
        ["apps", "taco", "codecontests", "codeforces", "apps", "taco"], answers, strict=True
    ):
        solution = f"Let me solve it.\n```python\n{program}\n```"
        theirs = float(prime_code().compute_score(solution, tests, continuous=True)[0])
        ours = score(source, solution, tests, {"index": 0})
        assert ours["valid"] and ours["score"] == pytest.approx(theirs), (source, program, ours)
        seen.add(theirs)
    assert seen == {0.0, 0.5, 1.0}
    math = score("lighteval/MATH", "So \\boxed{\\frac{1}{2}}.", "\\frac12", {"index": 0})
    assert math["score"] == 1.0


def test_search_r1_sources_score_as_verls_exact_match(
    module: ModuleType, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """veRL's Search-R1 rows (``data_source`` ``searchR1_nq``...: the ground truth
    ``{"target": [answers]}``, a numpy array in a parquet row) with no grader set: the score is
    veRL's own ``search_r1_like_qa_em.compute_score`` (the pinned wheel's, as
    ``default_compute_score`` calls it), the tag flood's quarter too."""
    monkeypatch.delenv("REFEREE_GRADER", raising=False)
    score = bound(module.compute_score, referee_url=server.url)
    truth = {"target": np.array(["Barack Obama", "Obama"], dtype=object)}
    answers = [
        "<think>Search.</think><search>president 2009</search><answer>barack obama</answer>",
        "<answer>Obama.</answer>",
        "<answer>Joe Biden</answer>",
        "Barack Obama",
        "<answer>Obama</answer>" * 12,
        "<answer>The Obama</answer> <answer>Biden</answer>",
    ]
    seen = set()
    for source, answer in zip(itertools.cycle(["searchR1_nq", "searchR1_hotpotqa"]), answers):
        theirs = float(search_r1().compute_score(answer, truth))
        ours = score(source, answer, truth, {"index": 0})
        assert ours["valid"] and ours["score"] == theirs, (answer, ours, theirs)
        seen.add(theirs)
    assert seen == {0.0, 0.25, 1.0}


def test_dapo_math_sources_score_as_verls_math_dapo(
    module: ModuleType, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """veRL's DAPO rows (``math_dapo``: DAPO-Math-17k's; ``aime_2024``..., ``math``) with no
    grader set, answered as DAPO's prompt asks (``Answer: $Answer`` on the last line): the score
    is veRL's own ``math_dapo.compute_score`` (the pinned wheel's), 1 right and -1 wrong, so
    DAPO's overlong penalty weighs what it weighs there; ``acc`` is 0 or 1 as there. With a
    grader given the score is the grader's. A row referee cannot score is 0 and not valid."""
    monkeypatch.delenv("REFEREE_GRADER", raising=False)
    score = bound(module.compute_score, referee_url=server.url)
    answers = {  # (response, ground truth)
        "So the sum is 34.\nAnswer: 34": "34",
        "Thus $x = 5$.\n\nAnswer: $5$": "5",
        "We get 33.\nAnswer: 33": "34",
        "The ratio is one half.\nAnswer: \\frac{1}{2}": "\\frac{1}{2}",
        "Answer: 7\nWait, recount.\nAnswer: 8": "8",
        "Answer: 8\nWait, recount.\nAnswer: 7": "8",
        "The count: Answer: 120": "120",
    }
    sources = itertools.cycle(["math_dapo", "aime_2024", "math", "math_dapo_reasoning"])
    seen = set()
    for (answer, truth), source in zip(answers.items(), sources, strict=False):
        theirs = math_dapo().compute_score(answer, truth)
        ours = score(source, answer, truth, {"index": 0})
        assert ours["valid"], (answer, ours)
        assert (ours["score"], ours["acc"]) == (theirs["score"], float(theirs["acc"])), (
            answer,
            ours,
            theirs,
        )
        seen.add(theirs["score"])
    assert seen == {1.0, -1.0}
    given = bound(module.compute_score, referee_url=server.url, grader={"type": "math"})
    assert given("math_dapo", "Answer: 33", "34", None)["score"] == 0.0
    assert score("math_dapo", "Answer: 3", "\\frac{", None)["score"] == 0.0  # bad reference


def test_geometry3k_rows_score_as_verls_geo3k(
    module: ModuleType, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """veRL's geometry3k rows (``hiyouga/geometry3k``, its multimodal example) with no grader
    set: 0.9 for the boxed answer and 0.1 for veRL's format (its own ``format_reward``, the
    pinned wheel's), as its ``geo3k.compute_score`` weighs them."""
    monkeypatch.delenv("REFEREE_GRADER", raising=False)
    score = bound(module.compute_score, referee_url=server.url)
    answers = {  # the response and whether its boxed answer is right
        "<think>The angles sum to 180.</think> So x = \\boxed{30}": True,
        "The angles sum to 180, so x = \\boxed{30}.": True,
        "<think>Hm.</think> x = \\boxed{45}": False,
        "<think>Hm.</think> x = 30": False,
        " <think>Hm.</think> x = \\boxed{30}": True,
    }
    seen = set()
    for answer, right in answers.items():
        theirs = 0.9 * right + 0.1 * geo3k_format_reward()(answer)
        ours = score("hiyouga/geometry3k", answer, "30", {"index": 0})
        assert ours["valid"] and ours["score"] == pytest.approx(theirs), (answer, ours)
        seen.add(round(theirs, 6))
    assert seen == {1.0, 0.9, 0.1, 0.0}
