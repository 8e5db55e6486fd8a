"""The ``referee`` command, run as a user runs it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import procedural_deadline as deadline
from referee_cli import referee

from referee.services.launcher import TINY_MODELS_ENV

Server = Any


def test_verify_prints_the_verdict() -> None:
    done = referee("verify", "so the answer is \\boxed{\\frac{1}{2}}", "0.5")
    assert done.returncode == 0, done.stderr
    assert "correct" in done.stdout and "exact" in done.stdout
    wrong = referee("verify", "--json", "\\boxed{3}", "4")
    assert wrong.returncode == 1
    assert json.loads(wrong.stdout)["outcome"] == "wrong"


def test_verify_hostile_input_answers_in_time() -> None:
    done = referee("verify", "--json", "--timeout", "2", "\\boxed{9^{9^{9^{9^{9}}}}}", "1")
    assert done.returncode == 1
    verdict = json.loads(done.stdout)
    assert verdict["outcome"] == "rejected", verdict  # a guard refuses it before evaluation
    assert "power tower" in verdict["reason"], verdict


def _write_batch(path: Path) -> None:
    lines = [
        json.dumps(
            {
                "id": f"a{i}",
                "response": f"\\boxed{{{i}}}",
                "grader": {"type": "math", "reference": "2"},
                "group": "g",
            }
        )
        for i in range(5)
    ]
    lines.insert(2, "{not json")
    lines.insert(4, json.dumps({"id": "bad", "response": "1", "grader": {"type": "unknown"}}))
    path.write_text("\n".join(lines) + "\n")


def test_rewards_in_process(tmp_path: Path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_batch(src)
    done = referee("rewards", str(src), "--out", str(out), "--workers", "1")
    assert done.returncode == 2  # two invalid lines, reported, nothing lost
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == ["a0", "a1", "a2", "a3", "a4", "3", "bad"]
    assert [r["score"] for r in results[:5]] == [0, 0, 1, 0, 0]
    assert results[5]["details"]["outcome"] == "invalid"
    assert "line 3: not JSON" in results[5]["details"]["error"]
    assert "grader" in results[6]["details"]["error"]
    assert "5 scored" in done.stderr and "2 invalid lines" in done.stderr
    assert "scoring" in done.stderr  # the progress bar


def test_rewards_through_the_server(server: Server, tmp_path: Path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_batch(src)
    done = referee("rewards", str(src), "--out", str(out), "--server", server.url, "--quiet")
    assert done.returncode == 2
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["score"] for r in results[:5]] == [0, 0, 1, 0, 0]


def test_missing_file() -> None:
    done = referee("rewards", "/nonexistent/file.jsonl")
    assert done.returncode == 2 and "No such file" in done.stderr


def test_run_prints_output_and_mirrors_the_status(tmp_path: Path) -> None:
    prog = tmp_path / "rev.py"
    prog.write_text(
        "import sys\ns = sys.stdin.read()\nprint(s[::-1])\nprint('note', file=sys.stderr)"
    )
    done = referee("run", str(prog), "--lang", "python", "--stdin", "abc")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cba\n"
    assert "note" in done.stderr and "referee: ok" in done.stderr

    data = tmp_path / "in.txt"
    data.write_text("xyz")
    done = referee("run", str(prog), "--lang", "py", "--stdin-file", str(data))
    assert done.stdout == "zyx\n"

    crash = tmp_path / "crash.py"
    crash.write_text("raise SystemExit(9)")
    assert referee("run", str(crash), "--lang", "python").returncode == 1

    loop = tmp_path / "loop.py"
    loop.write_text("while True: pass")
    done = referee("run", str(loop), "--lang", "python", "--time-limit", "0.5")
    assert done.returncode == 4 and "time_limit" in done.stderr

    bad = tmp_path / "bad.cpp"
    bad.write_text("int main( {")
    done = referee("run", str(bad), "--lang", "cpp")
    assert done.returncode == 3 and "compile_error" in done.stderr and "error" in done.stderr


def test_run_through_a_server(server: Server, tmp_path: Path) -> None:
    prog = tmp_path / "big.py"
    prog.write_text("x = bytearray(1 << 30)")
    done = referee(
        "run", str(prog), "--lang", "python", "--memory-mb", "64", "--server", server.url
    )
    assert done.returncode == 5 and "memory_limit" in done.stderr


def test_rewards_in_process_with_code_and_math_items(tmp_path: Path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    tests = [{"stdin": "2 3\n", "stdout": "5\n"}, {"stdin": "10 -4\n", "stdout": "6\n"}]
    good = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    bad = "```python\nprint(5)\n```"
    rows = [
        {
            "id": "good",
            "response": good,
            "grader": {"type": "code", "language": "python", "tests": tests},
        },
        {
            "id": "bad",
            "response": bad,
            "grader": {"type": "code", "language": "python", "tests": tests},
        },
        {"id": "math", "response": "\\boxed{4}", "grader": {"type": "math", "reference": "4"}},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = referee("rewards", str(src), "--out", str(out), "--workers", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert results["good"]["score"] == 1.0
    assert results["bad"]["score"] == 0.5
    assert [t["outcome"] for t in results["bad"]["details"]["tests"]] == ["passed", "wrong_answer"]
    assert results["math"]["score"] == 1.0


def test_rewards_in_process_honour_the_procedural_deadline(tmp_path: Path) -> None:
    """``referee rewards`` scores with the server's Scorer: REFEREE_PROCEDURAL_TIMEOUT_S and
    REFEREE_MATH_TIMEOUT_S apply, to plain items and to length_penalty's inner batch."""
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(item) + "\n" for item in deadline.items()))
    env = {**deadline.ENV, "REFEREE_JUDGE_BACKEND": "none", "REFEREE_POLICY_BACKEND": "none"}
    done = referee("rewards", str(src), "--out", str(out), "--workers", "1", "--quiet", env=env)
    assert done.returncode == 0, done.stderr
    deadline.assert_honoured([json.loads(line) for line in out.read_text().splitlines()])


def test_rewards_in_process_use_the_judge_and_policy_the_settings_name(tmp_path: Path) -> None:
    """A genrm item is scored by REFEREE_JUDGE_*, a prm_mc item by REFEREE_POLICY_* (tiny
    random transformers models), as the server scores them."""
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    prm = {"type": "prm_mc", "reference": "10", "n_rollouts": 2, "max_tokens": 8}
    items = [
        {
            "id": "j",
            "prompt": "2+2?",
            "response": "4",
            "grader": {"type": "genrm", "label_probs": True},
        },
        {
            "id": "p",
            "prompt": "(2+3)*2?",
            "response": "Step 1: 5\nStep 2: \\boxed{10}",
            "grader": prm,
        },
    ]
    src.write_text("".join(json.dumps(item) + "\n" for item in items))
    env = dict(TINY_MODELS_ENV)
    done = referee("rewards", str(src), "--out", str(out), "--workers", "1", "--quiet", env=env)
    assert done.returncode == 0, done.stderr
    judged, estimated = (json.loads(line) for line in out.read_text().splitlines())
    assert judged["details"]["method"] == "label_probs", judged
    assert 0.0 < judged["score"] < 1.0
    assert estimated["details"]["outcome"] == "prm", estimated
    assert estimated["details"]["steps"], estimated


def test_rewards_in_process_read_the_database_files_the_settings_name(tmp_path: Path) -> None:
    """``referee rewards`` resolves an sql grader's ``database`` in REFEREE_SQL_DATABASES_DIR,
    as the server does, inside length_penalty's inner batch too; an unknown name is that line's
    error, the others are scored."""
    folder = tmp_path / "database" / "shop"
    folder.mkdir(parents=True)
    conn = sqlite3.connect(folder / "shop.sqlite")
    conn.executescript("CREATE TABLE t(id INT, name TEXT); INSERT INTO t VALUES (1,'a'),(2,'b');")
    conn.commit()
    conn.close()
    sql = {"type": "sql", "database": "shop", "reference": "SELECT name FROM t"}
    penalty = {"type": "length_penalty", "grader": sql, "beta": 0.5, "max_length": 1000}
    rows = [
        {"id": "ok", "response": "```sql\nSELECT name FROM t ORDER BY id DESC\n```", "grader": sql},
        {"id": "wrong", "response": "SELECT name FROM t WHERE id = 1", "grader": sql},
        {"id": "penalty", "response": "SELECT name FROM t", "grader": penalty, "group": "g"},
        {"id": "penalty-wrong", "response": "SELECT 1", "grader": penalty, "group": "g"},
        {"id": "unknown", "response": "SELECT 1", "grader": {**sql, "database": "nope"}},
    ]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {"REFEREE_SQL_DATABASES_DIR": str(tmp_path / "database")}
    done = referee("rewards", str(src), "--out", str(out), "--workers", "1", "--quiet", env=env)
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert results["ok"]["score"] == 1.0, results["ok"]
    assert results["wrong"]["score"] == 0.0
    # the group of two is scored together, though a line of its part was refused
    penalised = results["penalty"]["details"], results["penalty-wrong"]["details"]
    assert [d["inner"]["outcome"] for d in penalised] == ["correct", "wrong"], penalised
    assert [d["group_pass_rate"] for d in penalised] == [0.5, 0.5], penalised
    assert results["penalty"]["score"] > 0.9 and results["penalty-wrong"]["score"] <= 0
    assert results["unknown"]["score"] == 0.0
    error = results["unknown"]["details"]["error"]
    assert error.startswith("line 5: grader.database: no SQLite file 'nope'"), error
    assert done.returncode == 2, done.stderr  # the unknown database is reported


def test_rewards_through_the_server_lose_only_the_items_it_refuses(
    server: Server, tmp_path: Path
) -> None:
    """The server refuses a request for one item (a database it has no folder for): that line is
    reported with the server's reason, the rest of its chunk is scored."""
    sql = {"type": "sql", "database": "shop", "reference": "SELECT 1"}
    rows = [
        {"id": f"m{i}", "response": f"\\boxed{{{i}}}", "grader": {"type": "math", "reference": "1"}}
        for i in range(3)
    ]
    rows.insert(1, {"id": "sql", "response": "SELECT 1", "grader": sql})
    # a group after it: the SDK sends a chunk's groups first, so the server's index of the
    # refused item is not its place in the file
    math = {"type": "math", "reference": "2"}
    rows += [{"id": f"g{i}", "response": str(i), "grader": math, "group": "g"} for i in (2, 3)]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = referee("rewards", str(src), "--out", str(out), "--server", server.url, "--quiet")
    assert done.returncode == 2, done.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["score"]) for r in results] == [
        ("m0", 0.0),
        ("m1", 1.0),
        ("m2", 0.0),
        ("g2", 1.0),
        ("g3", 0.0),
        ("sql", 0.0),
    ]
    assert results[5]["details"]["outcome"] == "invalid"
    assert results[5]["details"]["error"].startswith("line 2: grader.database: this server has no")


def test_rewards_keep_each_group_whole_wherever_its_lines_are(tmp_path: Path) -> None:
    """Rollouts written round by round (every prompt once, then again): each group's lines lie
    far apart in the file, yet each group is scored whole however small the chunks, and the
    results come back in the file's order."""
    answers = {"p0": ["1", "1", "2", "1"], "p1": ["5", "6", "6", "6"]}
    rows = [
        {
            "id": f"{prompt}-r{k}",
            "response": f"\\boxed{{{answers[prompt][k]}}}",
            "grader": {"type": "majority_vote"},
            "group": prompt,
        }
        for k in range(4)
        for prompt in ("p0", "p1")
    ]
    rows.insert(
        3, {"id": "plain", "response": "\\boxed{4}", "grader": {"type": "math", "reference": "4"}}
    )
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for options in (
        ["--chunk-size", "3", "--workers", "1"],
        ["--chunk-size", "2", "--workers", "1"],
    ):
        out = tmp_path / "out.jsonl"
        done = referee("rewards", str(src), "--out", str(out), "--quiet", *options)
        assert done.returncode == 0, done.stderr
        results = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["id"] for r in results] == [r["id"] for r in rows]
        got = {r["id"]: r["score"] for r in results}
        # p0's majority is 1 (three of four), p1's is 6: had a part held half a group, a
        # two-rollout "group" of 1 and 2 (or 5 and 6) would have no majority
        assert got == {
            "p0-r0": 1.0, "p0-r1": 1.0, "p0-r2": 0.0, "p0-r3": 1.0,
            "p1-r0": 0.0, "p1-r1": 1.0, "p1-r2": 1.0, "p1-r3": 1.0,
            "plain": 1.0,
        }  # fmt: skip
