"""The middleware's scan of a JSON body before it is parsed (``json_problem``): the depth it
reads off the brackets agrees with the depth of what Python's parser builds, whatever the
strings hold (brackets, quotes, escaped quotes and backslashes), and NaN/Infinity outside
strings are refused."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from referee.services import middleware
from referee.services.json_body import PARSED
from referee.services.middleware import json_problem

# what a string may be made of: the bytes that could fool a scan of the brackets
PIECES = ["[", "]", "{", "}", '"', "\\", "a", '\\"', "\\\\", " ", "é", "NaN"]


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 10)))


def _value(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.15:
        return rng.choice([_text(rng), 1, None, 2.5, True])
    if rng.random() < 0.5:
        return [_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {_text(rng): _value(rng, depth - 1) for _ in range(rng.randint(0, 3))}


@pytest.mark.parametrize("bytes_a_quote", [None, 0, 10**9])
def test_the_depth_read_off_the_brackets_is_the_parsers(
    bytes_a_quote: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None: the scan as it chooses; 0: the pieces always walked (long strings); 10**9: the
    # escapes always removed first (short strings)
    if bytes_a_quote is not None:
        monkeypatch.setattr(middleware, "_BYTES_A_QUOTE", bytes_a_quote)
    rng = random.Random(7)
    checked = {True: 0, False: 0}
    for _ in range(5000):
        value = _value(rng, rng.randint(0, 14))
        body = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()
        limit = rng.randint(1, 12)
        too_deep = _depth(value) > limit
        problem = json_problem(body, limit)
        assert (problem is not None) == too_deep, (limit, _depth(value), body[:300])
        if too_deep:
            assert problem is not None and f"more than {limit} levels deep" in problem
        checked[too_deep] += 1
    assert min(checked.values()) > 500  # both sides of the limit were tried


@pytest.mark.parametrize("limit", [8, 64])
def test_exactly_at_the_limit_passes_and_one_more_is_refused(limit: int) -> None:
    at = "[" * limit + "]" * limit
    assert json_problem(at.encode(), limit) is None
    assert json_problem(("[" + at + "]").encode(), limit) is not None
    objects = '{"a":' * limit + "1" + "}" * limit
    assert json_problem(objects.encode(), limit) is None
    assert json_problem(('{"a":' + objects + "}").encode(), limit) is not None
    # the same depth spread out, with strings full of brackets beside it
    wide = "[" + ",".join(['"[[[[{{{{\\"[["', at, '"\\\\"']) + "]"
    assert json_problem(wide.encode(), limit) is not None
    assert json_problem(wide.encode(), limit + 1) is None


def test_brackets_and_escapes_inside_strings_do_not_count() -> None:
    body = json.dumps({"items": ["[" * 500, "{" * 500 + '\\"' * 50, "\\" * 99 + "[[["]}).encode()
    assert json_problem(body, 8) is None


def test_a_bracket_bomb_is_refused_without_a_pass_per_level() -> None:
    body = b"[" * 2_000_000 + b"]" * 2_000_000
    assert json_problem(body, 64) is not None


def test_malformed_json_is_left_to_the_parser() -> None:
    # unbalanced but shallow: the parser's error says more
    assert json_problem(b"[]" * 10 + b"[", 8) is None
    assert json_problem(b"]]]]]]]]]]]]", 8) is None
    assert json_problem(b"[1]" * 10 + b"}", 8) is None
    # unclosed and deep: the parser would go that deep before it found the end
    assert json_problem(b"[" * 100, 8) is not None


def test_nan_and_infinity_outside_strings_are_refused() -> None:
    for body in (b'{"x": NaN}', b'{"x": -Infinity}', b"[1, Infinity]"):
        problem = json_problem(body, 64)
        assert problem is not None and "NaN and Infinity" in problem
    for body in (b'{"x": "NaN"}', b'{"x": "is -Infinity"}', b'{"NaN": 1}'):
        assert json_problem(body, 64) is None


def _guard(body: bytes, limit: int) -> tuple[str | None, dict[str, Any]]:
    scope: dict[str, Any] = {}
    return middleware._json_problem(scope, body, limit), scope


@pytest.mark.parametrize("seed", [3, 11])
def test_the_guard_reading_orjsons_parse_answers_as_the_scan(seed: int) -> None:
    """The guard reads the depth off orjson's parse where orjson reads the body, and leaves
    the value for the route: the same answer as the scan of the text, the value Python's parser
    gives, on random bodies both sides of the limit and on what orjson does not read."""
    rng = random.Random(seed)
    for _ in range(3000):
        value = _value(rng, rng.randint(0, 14))
        body = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()
        limit = rng.randint(1, 12)
        problem, scope = _guard(body, limit)
        assert problem == json_problem(body, limit), (limit, body[:300])
        if problem is None:
            assert scope[PARSED][0] is body and scope[PARSED][1] == json.loads(body)
        else:
            assert PARSED not in scope
    odd = [
        b'{"x": NaN}',
        b"[1, -Infinity]",
        b'{"x": "NaN"}',
        b"\xef\xbb\xbf[[[1]]]",  # a BOM: orjson refuses it
        b'{"big": 123456789012345678901234567890}',  # orjson reads a float: Python's parser
        b'{"lone": "\\ud800"}',
        b'{"a": [1, 2}',
        b"[" * 100,
        b"[" * 2000 + b"]" * 2000,  # past orjson's own limit: the scan
        b"[" * 9 + b"]" * 9,
        b'{"a":' * 9 + b"1" + b"}" * 9,
        b"[1e400]",
    ]
    for body in odd:
        problem, scope = _guard(body, 8)
        assert problem == json_problem(body, 8), body[:60]
    assert PARSED not in _guard(b'{"big": 123456789012345678901234567890}', 8)[1]


def test_the_route_takes_the_guards_value_and_parses_no_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fastapi.testclient import TestClient

    from referee.services import json_body
    from referee.services.app import create_app

    calls: list[bytes] = []
    real_parse = json_body.parse

    def counted(body: bytes) -> Any:
        calls.append(body)
        return real_parse(body)

    monkeypatch.setattr(json_body, "parse", counted)
    item = {"id": "a", "response": "42", "grader": {"type": "string_check", "reference": "42"}}
    with TestClient(create_app()) as client:
        ok = client.post("/v1/rewards", json={"items": [item]})
        assert ok.status_code == 200 and ok.json()["rewards"][0]["score"] == 1.0, ok.text
        assert calls == []  # the guard's reading served the route
        big = {**item, "response": "1", "grader": {"type": "string_check", "reference": "1"}}
        body = json.dumps({"items": [big], "x": 2**70}).encode()
        bad = client.post("/v1/rewards", content=body, headers={"content-type": "application/json"})
        assert calls == [body]  # an integer past 64 bits: Python's parser, in the route
        assert bad.status_code == 422 and "x" in bad.text  # (no such field: refused by name)
