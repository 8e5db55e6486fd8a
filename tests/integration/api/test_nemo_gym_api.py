"""/nemo-gym/{env}/ routes on a real server, with referee's own reading of the bodies (NeMo Gym
0.7.0's own code drives them through the shipped resources server in test_nemo_gym_server.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from referee.services.launcher import Server
from referee.services.routes.nemo_gym import COOKIE


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Iterator[str]:
    env = {"REFEREE_SESSIONS_MAX_LIVE": "3", "REFEREE_SANDBOX_SLOTS": "2"}
    server: Server = referee_server_factory(tmp_path_factory.mktemp("nemo"), env, "nemo")
    yield str(server.url)
    server.stop()


def _response(text: str) -> dict[str, Any]:
    return {
        "id": "resp-1",
        "object": "response",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "id": "msg-1",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
    }


ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "What is 2**100 mod 7?"}]},
    "prompt": "What is 2**100 mod 7?",
    "reference": "2",
}


def test_python_episode_keeps_state_and_verifies(url: str) -> None:
    with httpx.Client(base_url=f"{url}/nemo-gym/python", timeout=120) as c:
        r = c.post("/seed_session", json=ROW)
        assert r.status_code == 200, r.text
        assert r.json() == {}
        assert (c.cookies.get(COOKIE.format(env="python")) or "").startswith("s-")
        r = c.post("/python", json={"code": "x = 2**100 % 7"})
        assert r.status_code == 200, r.text
        r = c.post("/python", json={"code": "print(x)"})
        assert r.status_code == 200, r.text
        assert r.text.strip() == "2"
        r = c.post("/verify", json={**ROW, "response": _response("The answer is \\boxed{2}")})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["reward"] == 1.0
        assert body["responses_create_params"] == ROW["responses_create_params"]
        assert body["response"]["id"] == "resp-1"
        assert "mask_sample" not in body
        assert c.post("/close_session", json={}).status_code == 200


def test_verify_without_seed_opens_a_session_from_the_row(url: str) -> None:
    r = httpx.post(
        f"{url}/nemo-gym/python/verify",
        json={**ROW, "response": _response("\\boxed{3}")},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    assert r.json()["reward"] == 0.0


def test_the_row_s_own_grader_and_responses_input_are_used(url: str) -> None:
    """A NeMo Gym row with no ``prompt`` (its prompt is the Responses API input) and a referee
    grader of its own instead of a math reference; a bad grader is a 422 naming it."""
    row = {
        "responses_create_params": {"input": [{"role": "user", "content": "Name a color."}]},
        "grader": {"type": "string_check", "reference": "blue", "operation": "ilike"},
    }
    with httpx.Client(base_url=f"{url}/nemo-gym/python", timeout=120) as c:
        right = c.post("/verify", json={**row, "response": _response("I pick BLUE.")})
        assert right.status_code == 200 and right.json()["reward"] == 1.0, right.text
        wrong = c.post("/verify", json={**row, "response": _response("red")})
        assert wrong.status_code == 200 and wrong.json()["reward"] == 0.0, wrong.text
        bad = c.post(
            "/verify", json={**row, "grader": {"type": "nope"}, "response": _response("x")}
        )
        assert bad.status_code == 422 and "task.grader" in bad.json()["detail"], bad.text


def test_bad_row_is_a_clear_422(url: str) -> None:
    r = httpx.post(f"{url}/nemo-gym/python/verify", json=[1, 2], timeout=60)
    assert r.status_code == 422, r.text
    assert "JSON object" in r.text


def test_reverify_mode_and_aggregate_metrics(url: str) -> None:
    r = httpx.get(f"{url}/nemo-gym/python/reverify_mode", timeout=60)
    assert r.status_code == 200 and r.json() == "stateless", r.text
    rows = [{"reward": 1.0}, {"reward": 0.0, "mask_sample": True}]
    r = httpx.post(
        f"{url}/nemo-gym/python/aggregate_metrics", json={"verify_responses": rows}, timeout=60
    )
    assert r.status_code == 200, r.text
    assert r.json()["agent_metrics"]["mean/reward"] == 0.5
    assert r.json()["agent_metrics"]["masked"] == 1.0


def test_procedural_episode_seeded_from_the_row(url: str) -> None:
    r = httpx.post(
        f"{url}/v1/environments/basic_arithmetic/problems", json={"n": 1, "seed": 11}, timeout=120
    )
    assert r.status_code == 200, r.text
    [problem] = r.json()["problems"]
    row = {"responses_create_params": {"input": []}, "task": "basic_arithmetic", "seed": 11}
    with httpx.Client(base_url=f"{url}/nemo-gym/procedural", timeout=120) as c:
        assert c.post("/seed_session", json=row).status_code == 200
        right = _response(f"<answer>{problem['answer']}</answer>")
        r = c.post("/verify", json={**row, "response": right})
        assert r.status_code == 200, r.text
        assert r.json()["reward"] == 1.0 and r.json()["seed"] == 11
        assert c.post("/close_session", json={}).status_code == 200


CODE_ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "Sum two integers."}]},
    "prompt": "Read two integers and print their sum.",
    "tests": [{"stdin": "1 2\n", "stdout": "3\n"}],
    "hidden_tests": [{"stdin": "40 2\n", "stdout": "42\n"}],
}


def test_code_episode_runs_tests_then_verifies(url: str) -> None:
    with httpx.Client(base_url=f"{url}/nemo-gym/code", timeout=120) as c:
        assert c.post("/seed_session", json=CODE_ROW).status_code == 200
        wrong = "a, b = map(int, input().split())\nprint(a - b)\n"
        r = c.post("/run_tests", json={"code": wrong})
        assert r.status_code == 200 and r.text.startswith("passed 0 of 1 tests"), r.text
        right = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
        r = c.post("/verify", json={**CODE_ROW, "response": _response(right)})
        assert r.status_code == 200, r.text
        assert r.json()["reward"] == 1.0
        assert c.post("/close_session", json={}).status_code == 200


def test_bad_seed_is_a_clear_422(url: str) -> None:
    r = httpx.post(f"{url}/nemo-gym/procedural/seed_session", json={"seed": "x"}, timeout=60)
    assert r.status_code == 422, r.text
    assert "seed" in r.text


def test_expected_answer_is_the_reference(url: str) -> None:
    row = {"responses_create_params": {"input": []}, "prompt": "2+2?", "expected_answer": "4"}
    r = httpx.post(
        f"{url}/nemo-gym/python/verify",
        json={**row, "response": _response("\\boxed{4}")},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    assert r.json()["reward"] == 1.0 and r.json()["expected_answer"] == "4"


def test_a_lost_session_is_masked_saying_why(url: str) -> None:
    with httpx.Client(base_url=f"{url}/nemo-gym/python", timeout=120) as c:
        assert c.post("/seed_session", json=ROW).status_code == 200
        sid = c.cookies.get(COOKIE.format(env="python"))
        assert httpx.delete(f"{url}/v1/sessions/{sid}", timeout=60).status_code == 200
        r = c.post("/verify", json={**ROW, "response": _response("\\boxed{2}")})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["mask_sample"] is True and body["failure_kind"] == "session_lost"
        assert "session lost" in body["failure_reason"] and sid in body["failure_reason"]
        assert body["reward"] == 0.0


def test_gymnasium_reset_step_close_runs_tool_calls_keeping_state(url: str) -> None:
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "python",
        "arguments": '{"code": "y = pow(2, 100, 7)\\nprint(y)"}',
    }
    with httpx.Client(base_url=f"{url}/nemo-gym/python", timeout=120) as c:
        r = c.post("/reset", json=ROW)
        assert r.status_code == 200, r.text
        assert r.json()["observation"] is None and r.json()["info"]["supports_explicit_close"]
        turn = {**ROW, "response": {"output": [call]}, "_ng_step_request_id": "t-1"}
        r = c.post("/step", json=turn)
        assert r.status_code == 200, r.text
        assert r.json()["info"]["tool_outputs"] == [{"call_id": "c1", "output": "2\n"}]
        assert r.json()["terminated"] is False
        r = c.post("/step", json={**ROW, "response": _response("\\boxed{2}")})
        assert r.status_code == 200, r.text
        assert r.json()["reward"] == 1.0 and r.json()["terminated"] is True
        assert c.post("/close", json={}).status_code == 200


# Rows in the shape of NeMo Gym's own resources servers (their request models' fields): mcqa,
# instruction_following, code_gen (LiveCodeBench's unit_tests, plain and packed).
def _verify(url: str, env: str, row: dict[str, Any], text: str) -> httpx.Response:
    return httpx.post(
        f"{url}/nemo-gym/{env}/verify", json={**row, "response": _response(text)}, timeout=120
    )


def test_an_mcqa_row_s_options_and_expected_answer_are_a_multiple_choice_grader(url: str) -> None:
    row = {
        "responses_create_params": {"input": [{"role": "user", "content": "2+2? A) 3 B) 4 C) 5"}]},
        "options": [{"A": "3"}, {"B": "4"}, {"C": "5"}],
        "expected_answer": "B",
        "grading_mode": "strict_single_letter_boxed",
    }
    right = _verify(url, "python", row, "It is \\boxed{B}")
    assert right.status_code == 200 and right.json()["reward"] == 1.0, right.text
    assert right.json()["expected_answer"] == "B" and right.json()["options"] == row["options"]
    assert _verify(url, "python", row, "It is \\boxed{C}").json()["reward"] == 0.0
    # a letter the options do not have is a choice of nothing, not a match
    assert _verify(url, "python", row, "It is \\boxed{D}").json()["reward"] == 0.0
    bad = _verify(url, "python", {**row, "expected_answer": "Z"}, "\\boxed{B}")
    assert bad.status_code == 422 and "A', 'B', 'C'" in bad.text, bad.text
    bad = _verify(url, "python", {**row, "options": [{"A": "3", "B": "4"}]}, "\\boxed{B}")
    assert bad.status_code == 422 and "letter: text" in bad.text, bad.text


def test_an_ifeval_row_is_an_instruction_following_grader_all_or_nothing(url: str) -> None:
    row = {
        "id": 7,
        "prompt": "Describe the sea in lower case, without commas.",
        "responses_create_params": {"input": "Describe the sea in lower case, without commas."},
        "instruction_id_list": ["change_case:english_lowercase", "punctuation:no_comma"],
        "kwargs": [{}, {"unused": None}],
    }
    right = _verify(url, "python", row, "the sea is wide and blue")
    assert right.status_code == 200 and right.json()["reward"] == 1.0, right.text
    one = _verify(url, "python", row, "the sea is wide, and blue")  # lower case, a comma
    assert one.status_code == 200 and one.json()["reward"] == 0.0, one.text
    bad = _verify(
        url, "python", {**row, "instruction_id_list": ["nope:nothing", "punctuation:no_comma"]}, "x"
    )
    assert bad.status_code == 422 and "nope:nothing" in bad.text, bad.text


def _packed(value: Any) -> str:
    import base64
    import json
    import zlib

    return base64.b64encode(zlib.compress(json.dumps(value).encode())).decode()


CODE_GEN_ROW = {
    "responses_create_params": {"input": "Read two integers and print their sum."},
    "verifier_metadata": {
        "unit_tests": {"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]},
        "difficulty": "easy",
    },
}


def test_a_code_gen_row_s_unit_tests_are_the_hidden_tests(url: str) -> None:
    right = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    wrong = "```python\nprint(3)\n```"
    with httpx.Client(base_url=f"{url}/nemo-gym/code", timeout=120) as c:
        assert c.post("/seed_session", json=CODE_GEN_ROW).status_code == 200
        r = c.post("/run_tests", json={"code": wrong})  # the tests are hidden: nothing is shown
        assert r.status_code == 200 and "no visible tests" in r.text, r.text
        r = c.post("/verify", json={**CODE_GEN_ROW, "response": _response(wrong)})
        assert r.status_code == 200 and r.json()["reward"] == 0.5, r.text  # passes 1 of 2
        assert r.json()["verifier_metadata"]["difficulty"] == "easy"
    assert _verify(url, "code", CODE_GEN_ROW, right).json()["reward"] == 1.0
    # LiveCodeBench's evaluator (NeMo Gym's code_gen) runs a solution after its imports
    bare = "```python\na, b = map(int, sys.stdin.readline().split())\n"
    bare += "print(gcd(a, b) * 0 + a + b)\n```"
    assert _verify(url, "code", CODE_GEN_ROW, bare).json()["reward"] == 1.0


def test_packed_and_call_unit_tests_and_a_zlib_bomb(url: str) -> None:
    tests = {"inputs": ["1\n2", "[1, 2]\n[3]"], "outputs": ["3", "[1, 2, 3]"]}
    row = {
        "responses_create_params": {"input": "Write add(a, b)."},
        "verifier_metadata": {"unit_tests": {"packed": _packed(tests), "fn_name": "add"}},
    }
    right = (
        "```python\nclass Solution:\n    def add(self, a: List[int], b: List[int]) -> List[int]:\n"
    )
    right += "        return a + b\n```"
    r = _verify(url, "code", row, right)
    assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
    assert (
        _verify(url, "code", row, "```python\ndef add(a, b):\n    return a\n```").json()["reward"]
        == 0.0
    )
    # 1 GiB of zeros packed into about 1 MB: refused after 64 MiB, the server unharmed
    import base64
    import zlib

    squeeze = zlib.compressobj(9)
    chunk = b"0" * (1 << 20)
    blob = b"".join(squeeze.compress(chunk) for _ in range(1024)) + squeeze.flush()
    bomb = {"unit_tests": {"packed": base64.b64encode(blob).decode()}}
    r = _verify(url, "code", {**row, "verifier_metadata": bomb}, right)
    assert r.status_code == 422 and "inflates past 64 MiB" in r.text, r.text
    for unit_tests, says in [
        ({"inputs": ["1"], "outputs": []}, "same, non-zero length"),
        ({"packed": "%%%"}, "not base64 zlib JSON"),
        ({"inputs": ["not json"], "outputs": ["1"], "fn_name": "add"}, "must be JSON"),
    ]:
        r = _verify(url, "code", {**row, "verifier_metadata": {"unit_tests": unit_tests}}, right)
        assert r.status_code == 422 and says in r.text, (unit_tests, r.text)
    assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200


XLAM_ROW = {
    "id": 3,
    "responses_create_params": {
        "input": [{"role": "user", "content": "Standings for stage 98765, then the weather?"}]
    },
    "expected_answers": [
        {"name": "stagecompetitorstandings", "arguments": {"is_id": 98765}},
        {"name": "get_weather", "arguments": {"city": "Paris"}},
    ],
}


def _calls(*calls: tuple[str, Any], text: str = "") -> dict[str, Any]:
    out: list[dict[str, Any]] = [
        {"type": "function_call", "call_id": f"c{k}", "name": n, "arguments": json.dumps(a)}
        for k, (n, a) in enumerate(calls)
    ]
    if text:
        out.append(_response(text)["output"][0])
    return {"id": "resp", "object": "response", "output": out}


def test_an_xlam_fc_row_s_expected_answers_grade_the_function_calls(url: str) -> None:
    """NeMo Gym's xlam_fc rows: the response's ``function_call`` items against
    ``expected_answers``, all or nothing, in any order, only the expected arguments compared
    (NeMo Gym's own xlam_fc server agrees case by case: test_nemo_gym_server.py)."""
    standings = ("stagecompetitorstandings", {"is_id": 98765})
    weather = ("get_weather", {"city": "Paris"})

    def reward(response: dict[str, Any]) -> Any:
        r = httpx.post(
            f"{url}/nemo-gym/python/verify", json={**XLAM_ROW, "response": response}, timeout=120
        )
        assert r.status_code == 200, r.text
        return r.json()["reward"]

    assert reward(_calls(standings, weather)) == 1.0
    assert reward(_calls(weather, standings, text="Here they are.")) == 1.0
    assert reward(_calls(standings, ("get_weather", {"city": "Paris", "unit": "c"}))) == 1.0
    assert reward(_calls(standings)) == 0.0
    assert reward(_calls(standings, weather, weather)) == 0.0
    assert reward(_calls(standings, ("get_weather", {"city": "Lyon"}))) == 0.0
    assert reward(_response(json.dumps(XLAM_ROW["expected_answers"]))) == 0.0  # words, no calls


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "born": {"type": "string", "format": "date"}},
}


def test_a_structured_outputs_row_s_schema_grades_the_payload(url: str) -> None:
    """NeMo Gym's structured_outputs rows: the schema made strict as that server makes it (all
    properties required, no others), on the whole text (JSON, YAML, TOML) or a
    tool call's arguments; a schema type referee does not read is a 422 saying so (NeMo Gym's
    own server agrees case by case: test_nemo_gym_server.py)."""
    row = {
        "responses_create_params": {"input": "Who was born when?"},
        "schema_str": json.dumps(SCHEMA),
        "schema_type": "json",
    }
    good = {"name": "Ada", "born": "1815-12-10"}

    def reward(row: dict[str, Any], response: dict[str, Any]) -> Any:
        r = httpx.post(f"{url}/nemo-gym/python/verify", json={**row, "response": response})
        return r.json()["reward"] if r.status_code == 200 else (r.status_code, r.text)

    assert reward(row, _response(json.dumps(good))) == 1.0
    assert reward(row, _response(json.dumps({"name": "Ada"}))) == 0.0  # strict: born required
    assert reward(row, _response(json.dumps({**good, "x": 1}))) == 0.0
    # `format` is an annotation there too (its validator is given no format checker)
    assert reward(row, _response(json.dumps({**good, "born": "10/12/1815"}))) == 1.0
    assert reward(row, _response(f"```json\n{json.dumps(good)}\n```")) == 0.0  # whole text
    yaml_row = {**row, "schema_type": "yaml"}
    assert reward(yaml_row, _response("name: Ada\nborn: '1815-12-10'\n")) == 1.0
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    assert reward(yaml_row, _response(bomb)) == 0.0  # 9**9 by reference: no value, no hang
    tool_row = {**row, "response_mode": "tool_call", "tool_payload_key": "record"}
    call = {"type": "function_call", "call_id": "c", "name": "emit"}
    args = json.dumps({"record": good})
    assert reward(tool_row, {"output": [{**call, "arguments": args}]}) == 1.0
    assert reward(tool_row, {"output": [{**call, "arguments": json.dumps(good)}]}) == 0.0
    status, text = reward({**row, "schema_type": "xml"}, _response("<a/>"))
    assert status == 422 and "json, yaml and toml" in text


def test_a_math_answer_after_a_tool_call_is_its_text(url: str) -> None:
    """A row graded on its text (math, here) reads the response's text only: the arguments of
    a tool call made on the way (a code tool's, math_with_code's rows) are not its answer; a
    row whose own grader is a tool_call grader reads the calls."""
    row = {**ROW, "reference": "7"}
    tool = {"type": "function_call", "call_id": "c", "name": "python", "arguments": '{"x": 8}'}
    response = _response("Adding up, I get 7.")
    response["output"].insert(0, tool)
    r = httpx.post(f"{url}/nemo-gym/python/verify", json={**row, "response": response})
    assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
    graded = {
        **row,
        "grader": {"type": "tool_call", "reference": [{"name": "python", "arguments": {"x": 8}}]},
    }
    r = httpx.post(f"{url}/nemo-gym/python/verify", json={**graded, "response": response})
    assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
