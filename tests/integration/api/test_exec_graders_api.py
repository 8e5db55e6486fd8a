"""sql, tool_call, python and OpenAI's multi grader in /v1/rewards on a real server (real check
pool, real bubblewrap sandbox for python graders)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

Server = Any

SETUP = (
    "CREATE TABLE t(id INT, name TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');"
    "CREATE TABLE big(x INT); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c "
    "WHERE i < 2000) INSERT INTO big SELECT i FROM c;"
)


def post(server: Server, items: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(server.url + "/v1/rewards", json={"items": items}, timeout=120)


def rewards(server: Server, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    resp = post(server, items)
    assert resp.status_code == 200, resp.text
    out: list[dict[str, Any]] = resp.json()["rewards"]
    return out


def sql_item(item_id: str, response: str, **extra: Any) -> dict[str, Any]:
    grader = {"type": "sql", "setup": SETUP, "reference": "SELECT name FROM t", **extra}
    return {"id": item_id, "response": response, "grader": grader}


def test_sql_rewards(server: Server) -> None:
    out = rewards(
        server,
        [
            sql_item("ok", "```sql\nSELECT name FROM t ORDER BY id DESC\n```"),
            sql_item("wrong", "```sql\nSELECT name FROM t WHERE id > 1\n```"),
            sql_item("bad_ref", "SELECT 1", reference="SELECT nope FROM t"),
        ],
    )
    assert [r["score"] for r in out] == [1.0, 0.0, None]
    assert out[1]["details"]["outcome"] == "wrong"
    assert out[2]["details"]["outcome"] == "bad_reference"
    assert out[2]["details"]["valid"] is False
    assert [r["valid"] for r in out] == [True, True, False]


HOSTILE = [
    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c",
    "SELECT count(*) FROM big a, big b, big c",
    "ATTACH DATABASE '/tmp/referee-attached.db' AS x",
    "SELECT load_extension('/lib/x86_64-linux-gnu/libc.so.6')",
    "DELETE FROM t",
    "PRAGMA query_only = 0",
    "SELECT printf('%.*c', 2000000000, 'x')",
    "SELECT zeroblob(2000000000)",
]


def test_hostile_sql_through_the_server(server: Server) -> None:
    items = [sql_item(f"h{i}", q, timeout_s=0.5) for i, q in enumerate(HOSTILE)]
    items.append(sql_item("after", "SELECT name FROM t"))
    out = rewards(server, items)
    stops = {"timeout", "refused", "too_large", "sql_error"}
    for query, reward in zip(HOSTILE, out, strict=False):
        assert reward["score"] == 0.0, (query, reward)
        assert reward["details"]["outcome"] in stops, (query, reward)
    assert out[-1]["score"] == 1.0  # the database was untouched
    assert httpx.get(server.url + "/healthz", timeout=10).status_code == 200
    # and the next batch is served as before
    assert rewards(server, [sql_item("again", "SELECT name FROM t")])[0]["score"] == 1.0


def test_sql_grader_errors_are_4xx(server: Server) -> None:
    resp = post(server, [{"id": "x", "response": "SELECT 1", "grader": {"type": "sql"}}])
    assert resp.status_code in (400, 422), resp.text
    assert "reference" in resp.text


def _spider_folder(root: Path) -> Path:
    """Spider's layout: database/<db_id>/<db_id>.sqlite; and one file as NAME.db."""
    for name, setup in (("concert_singer", SETUP), ("flat", "CREATE TABLE t(x INT);")):
        path = root / name / f"{name}.sqlite" if name != "flat" else root / "flat.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path)
        conn.executescript(setup)
        conn.commit()
        conn.close()
    return root


def test_sql_graders_name_the_servers_database_files(
    tmp_path: Path, referee_server_factory: Any, server: Server
) -> None:
    """A Spider-style row names its database (``db_id``); the server's folder has the file."""
    folder = _spider_folder(tmp_path / "database")
    files = referee_server_factory(
        tmp_path, {"REFEREE_SQL_DATABASES_DIR": str(folder)}, "sql-files"
    )

    def item(item_id: str, response: str, database: str, **extra: Any) -> dict[str, Any]:
        grader = {"type": "sql", "database": database, "reference": "SELECT name FROM t"}
        return {"id": item_id, "response": response, "grader": {**grader, **extra}}

    weighted = {
        "type": "weighted",
        "graders": [
            {"weight": 1, "grader": item("", "", "concert_singer")["grader"]},
            {"weight": 1, "grader": {"type": "string_check", "reference": "x"}},
        ],
    }
    out = rewards(
        files,
        [
            item("ok", "```sql\nSELECT name FROM t ORDER BY id DESC\n```", "concert_singer"),
            item("wrong", "SELECT name FROM t WHERE id > 1", "concert_singer"),
            item("flat", "SELECT count(*) FROM t", "flat", reference="SELECT 0"),
            item("write", "DELETE FROM t", "concert_singer"),
            {"id": "weighted", "response": "SELECT name FROM t", "grader": weighted},
        ],
    )
    assert [r["score"] for r in out] == [1.0, 0.0, 1.0, 0.0, 0.5]
    # length_penalty's inner grader names a file too (scored in the inner batch)
    inner = item("", "", "concert_singer")["grader"]
    penalty = {"type": "length_penalty", "grader": inner, "beta": 0.5}
    penalty = {**penalty, "max_length": 1000}
    group = [
        {"id": f"p{k}", "response": q, "grader": penalty, "group": "g"}
        for k, q in enumerate(["SELECT name FROM t", "SELECT 1"])
    ]
    penalised = rewards(files, group)
    assert [r["details"]["inner"]["outcome"] for r in penalised] == ["correct", "wrong"]
    assert penalised[0]["score"] > 0.9 and penalised[1]["score"] <= 0, penalised
    unknown_inner = {**penalty, "grader": {**inner, "database": "nope"}}
    refused = post(files, [{**member, "grader": unknown_inner} for member in group])
    assert refused.status_code == 422, refused.text
    assert "items.0.grader.grader.database" in refused.text, refused.text
    assert out[3]["details"]["outcome"] == "refused"
    assert (
        rewards(files, [item("again", "SELECT name FROM t", "concert_singer")])[0]["score"] == 1.0
    )

    # a file found before and then deleted is a 422 naming it, not a failed check; put back
    # under another of the names (NAME.db), it is found again
    (folder / "flat.db").rename(tmp_path / "flat.db")
    gone = post(files, [item("flat", "SELECT count(*) FROM t", "flat", reference="SELECT 0")])
    assert gone.status_code == 422 and "no SQLite file 'flat'" in gone.text, gone.text
    (folder / "flat").mkdir()
    (tmp_path / "flat.db").rename(folder / "flat" / "flat.db")
    back = rewards(files, [item("flat", "SELECT count(*) FROM t", "flat", reference="SELECT 0")])
    assert back[0]["score"] == 1.0, back

    unknown = post(files, [item("a", "SELECT 1", "concert_singer"), item("b", "x", "nope")])
    assert unknown.status_code == 422, unknown.text
    assert "items.1.grader.database" in unknown.text and "no SQLite file 'nope'" in unknown.text
    outside = post(files, [item("a", "SELECT 1", "../concert_singer")])
    assert outside.status_code == 422 and "database" in outside.text
    no_folder = post(server, [item("a", "SELECT 1", "concert_singer")])
    assert no_folder.status_code == 422 and "REFEREE_SQL_DATABASES_DIR" in no_folder.text
    job = httpx.post(files.url + "/v1/jobs", json={"items": [item("b", "x", "nope")]}, timeout=30)
    assert job.status_code == 422 and "no SQLite file 'nope'" in job.text, job.text
    for grader in (
        {"type": "sql", "reference": "SELECT 1"},
        {"type": "sql", "reference": "SELECT 1", "setup": SETUP, "database": "concert_singer"},
    ):
        both = post(files, [{"id": "a", "response": "SELECT 1", "grader": grader}])
        assert both.status_code == 422 and "exactly one of `setup`" in both.text, both.text


def test_tool_call_rewards(server: Server) -> None:
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}
    openai = json.dumps(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        }
    )
    hermes = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lyon"}}\n</tool_call>'
    grader = {"type": "tool_call", "reference": [call], "scoring": "partial"}
    out = rewards(
        server,
        [
            {"id": "openai", "response": openai, "grader": grader},
            {"id": "hermes", "response": hermes, "grader": grader},
        ],
    )
    assert out[0]["score"] == 1.0 and out[0]["details"]["format"] == "openai"
    assert out[1]["score"] == 2 / 3 and out[1]["details"]["format"] == "hermes"
    # BFCL's possible answers, and its Python-call answer format
    allowed = {
        "name": "get_weather",
        "allowed": {"city": ["Paris", "Paris, France"], "days": [3, ""]},
    }
    bfcl = {"type": "tool_call", "reference": [allowed]}
    calls = [
        '[get_weather(city="paris, france")]',  # BFCL's string match; days may be left out
        '[get_weather(city="Paris", days=3)]',
        '[get_weather(city="Paris", days=4)]',
    ]
    out = rewards(
        server, [{"id": str(k), "response": c, "grader": bfcl} for k, c in enumerate(calls)]
    )
    assert [r["score"] for r in out] == [1.0, 1.0, 0.0]
    assert out[0]["details"]["format"] == "pythonic"


GRADE = """
def grade(sample, item):
    print("noise that must not be read as the result")
    return 1.0 if sample["output_text"].strip() == item["answer"] else 0.0
"""


def python_item(item_id: str, source: str, response: str = "42", **extra: Any) -> dict[str, Any]:
    grader = {"type": "python", "source": source, "item": {"answer": "42"}, **extra}
    return {"id": item_id, "response": response, "grader": grader}


def test_python_grader_in_the_sandbox(server: Server) -> None:
    out = rewards(
        server,
        [
            python_item("right", GRADE),
            python_item("wrong", GRADE, response="41"),
            python_item(
                "json", "def grade(s, i):\n    return s['output_json']['x'] / 4\n", '{"x": 1}'
            ),
            python_item("raises", "def grade(s, i):\n    raise KeyError('answer')\n"),
            python_item("string", "def grade(s, i):\n    return 'yes'\n"),
            python_item("range", "def grade(s, i):\n    return 1.5\n"),
            python_item("nan", "def grade(s, i):\n    return float('nan')\n"),
            python_item("bool", "def grade(s, i):\n    return True\n"),
            python_item("missing", "def score(s, i):\n    return 1.0\n"),
            python_item("slow", "def grade(s, i):\n    while True:\n        pass\n", timeout_s=1),
            python_item(
                "memory",
                "def grade(s, i):\n    x = bytearray(1 << 31)\n    return 1.0\n",
                memory_mb=128,
            ),
            python_item(
                "network",
                "import socket\ndef grade(s, i):\n"
                "    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    return 1.0\n",
            ),
            python_item(  # OpenAI's output_text is the answer, not a think block
                "reasoning",
                "def grade(s, i):\n    return float(s['output_text'] == '41' == "
                "s['choices'][0]['message']['content'] and s['output_json'] == 41)\n",
                '<think>\n42? no: 41, {"x": 1}\n</think>\n\n41',
            ),
            python_item(
                "fake",
                "import os\nos.write(1, b'@@referee-result-0@@{\"value\": 1.0}\\n')\n"
                "def grade(s, i):\n    return 0.0\n",
            ),
        ],
    )
    by_id = {r["id"]: r for r in out}
    assert by_id["right"]["score"] == 1.0 and by_id["right"]["details"]["outcome"] == "graded"
    assert by_id["right"]["valid"] and by_id["wrong"]["valid"]
    assert by_id["wrong"]["score"] == 0.0
    assert by_id["json"]["score"] == 0.25
    assert by_id["reasoning"]["score"] == 1.0, by_id["reasoning"]
    assert by_id["fake"]["score"] == 0.0  # a forged line without the run's nonce is ignored
    reasons = {
        "raises": "KeyError",
        "string": "not a number",
        "range": "outside [0, 1]",
        "nan": "outside [0, 1]",
        "bool": "not a number",
        "missing": "no grade(sample, item)",
        "slow": "did not finish",
        "memory": "memory",
        "network": "raised",
    }
    for name, words in reasons.items():
        reward = by_id[name]
        assert reward["score"] is None, reward
        assert reward["valid"] is False and reward["details"]["valid"] is False, reward
        assert words in reward["details"]["reason"], reward
        # the user's code failed, or its run around it did (OpenAI's runtime and server errors)
        where = "runner" if name in ("slow", "memory") else "grade"
        assert reward["details"]["error_in"] == where, reward


def test_openai_multi_with_python_and_string_check(server: Server) -> None:
    grader = {
        "type": "multi",
        "name": "answer",
        "graders": {
            "code": {"type": "python", "source": GRADE, "item": {"answer": "42"}},
            "contains": {"type": "string_check", "reference": "4", "operation": "like"},
        },
        "calculate_output": "0.5 * code + 0.5 * contains",
    }
    out = rewards(
        server,
        [
            {"id": "a", "response": "42", "grader": grader},
            {"id": "b", "response": "43", "grader": grader},
            {"id": "c", "response": "7", "grader": grader},
        ],
    )
    assert [r["score"] for r in out] == [1.0, 0.5, 0.0]
    assert [p["name"] for p in out[0]["details"]["parts"]] == ["code", "contains"]


def test_model_graders_need_a_judge(server: Server) -> None:
    grader = {
        "type": "score_model",
        "model": "gpt-4o",
        "input": [{"role": "user", "content": "Rate {{sample.output_text}}"}],
    }
    resp = post(server, [{"id": "x", "response": "hi", "grader": grader}])
    assert resp.status_code == 503, resp.text
    assert "judge" in resp.json()["detail"]


def test_model_graders_are_judged(judge_server: Server) -> None:
    """score_model and label_model in OpenAI's JSON, judged by the server's taught model
    (tests/trained_judge.py): implicit rating 7 for the right answer and 3 for the wrong one,
    (r - 1) / 9 scaled to the range [0, 10]; the label criterion met only by the right one."""
    from trained_judge import OPENAI_GRADERS, QUESTION, RIGHT, WRONG

    items = [
        {"id": f"{kind}-{k}", "prompt": QUESTION, "response": response, "grader": grader}
        for kind, grader in OPENAI_GRADERS.items()
        for k, response in enumerate((RIGHT, WRONG))
    ]
    out = {r["id"]: r for r in rewards(judge_server, items)}
    assert out["score_model-0"]["score"] == pytest.approx(10 * 6 / 9), out["score_model-0"]
    assert out["score_model-1"]["score"] == pytest.approx(10 * 2 / 9)
    assert [out[f"label_model-{k}"]["score"] for k in (0, 1)] == [1.0, 0.0]
    details = out["score_model-0"]["details"]
    assert details["outcome"] == "score_model" and details["parts"][0]["type"] == "rubric"
    assert details["openai"] == {"name": "rater", "model": "gpt-4o-2024-08-06"}


COUNTER = """
calls = []
def grade(sample, item):
    calls.append(1)  # a fresh process per item: never more than one
    return 1.0 if len(calls) == 1 and sample["output_text"] == item["answer"] else 0.0
"""


def test_python_items_sharing_a_source_run_apart(server: Server) -> None:
    """Many items of one grader source share a sandbox job; each runs in a process of its own
    with its own row."""
    items = [
        {
            "id": str(k),
            "response": str(k % 3),
            "grader": {"type": "python", "source": COUNTER, "item": {"answer": str(k % 3)}},
        }
        for k in range(40)
    ]
    items[5]["response"] = "wrong"
    out = rewards(server, items)
    assert [r["score"] for r in out] == [0.0 if k == 5 else 1.0 for k in range(40)]


def test_tool_call_through_openrlhfs_route(server: Server) -> None:
    """OpenRLHF's remote reward route: labels as xLAM-style JSON strings, queries with the
    prompt and the chat template's end token, as OpenRLHF sends them."""
    prompt = "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"
    right = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    wrong = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
    label = json.dumps([{"name": "get_weather", "arguments": {"city": "Paris"}}])
    body = {
        "query": [prompt + right + "<|im_end|>", prompt + wrong + "<|im_end|>"],
        "prompts": [prompt, prompt],
        "labels": [label, label],
    }
    resp = httpx.post(server.url + "/openrlhf/reward/tool_call", json=body, timeout=60)
    assert resp.status_code == 200, resp.text
    assert resp.json()["rewards"] == [1.0, 0.0]
