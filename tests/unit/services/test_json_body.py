"""Request bodies are parsed by orjson where it can and by Python's parser where it cannot
(services/json_body.py): every body gets the value, or the error, Python's parser gives it; and
every route that takes a JSON body reads it so."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from referee.services.app import create_app
from referee.services.json_body import FastJSONRoute, parse

BODIES = [
    b'{"items": [{"id": "1", "response": "\\\\boxed{1}"}]}',
    b'{"a": 1.5e300, "b": -0.0, "c": [true, false, null], "d": "\\u00e9\\ud83d\\ude00"}',
    b'{"big": 123456789012345678901234567890, "neg": -98765432109876543210}',  # past 64 bits
    b'{"u64": 18446744073709551615, "i64": -9223372036854775808, "f": 1e300, "g": -2e19}',
    b'{"lone": "\\ud800 and \\udfff"}',  # lone surrogate escapes
    '{"utf16": "\u00e9"}'.encode("utf-16"),  # Python's parser detects the encoding
    b'{"dup": 1, "dup": 2}',
    b'{"s": "' + b"x" * 200_000 + b'"}',
    b"[" * 50 + b"]" * 50,
    b'  {"space": "around"}  \n',
]
BAD = [
    b'{"items": [\xff\xfe]}',
    b'{"a": }',
    b'{"a": 1} trailing',
    b"",
    b"\xef\xbb\xbf{}",  # a UTF-8 byte order mark
    b'{"a": NaN}',
]


@pytest.mark.parametrize("body", BODIES)
def test_a_body_gets_the_value_pythons_parser_gives(body: bytes) -> None:
    want = json.loads(body)
    got = parse(body)
    assert got == want and json.dumps(got) == json.dumps(want)


def _error(fn: Any, body: bytes) -> tuple[type, str]:
    try:
        fn(body)
    except Exception as exc:
        return type(exc), str(exc)
    return type(None), "parsed"


@pytest.mark.parametrize("body", BAD)
def test_a_bad_body_gets_the_error_pythons_parser_gives(body: bytes) -> None:
    kind, message = _error(json.loads, body)
    got_kind, got_message = _error(parse, body)
    assert issubclass(got_kind, kind) and got_message == message


def _routes(routes: list[Any]) -> list[Any]:
    out = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        out.extend(_routes(inner.routes) if inner is not None else [route])
    return out


def test_every_route_that_takes_a_body_reads_it_by_orjson() -> None:
    routes = [r for r in _routes(create_app().routes) if isinstance(r, APIRoute)]
    with_body = [r for r in routes if r.body_field is not None]
    assert len(with_body) >= 15
    assert [r.path for r in with_body if not isinstance(r, FastJSONRoute)] == []


@pytest.mark.slow  # about 2 s: starts the app and its pool
def test_an_integer_past_64_bits_is_graded_exactly_and_a_bad_body_is_the_same_422() -> None:
    # orjson reads 2**70 + 1 as the float 2**70; Python's parser, and so the grader, exactly
    big = 2**70 + 1

    def call(n: int) -> dict[str, object]:
        return {"name": "f", "arguments": {"n": n}}

    grader = {"type": "tool_call", "reference": [call(big)]}
    items = [
        {"id": i, "response": f"<tool_call>{json.dumps(call(n))}</tool_call>", "grader": grader}
        for i, n in (("same", big), ("off_by_one", big - 1))
    ]
    body = json.dumps({"items": items})  # Python writes the integers exactly
    assert str(big) in body
    with TestClient(create_app()) as client:
        r = client.post(
            "/v1/rewards",
            content=body,
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 200, r.text
        assert [x["score"] for x in r.json()["rewards"]] == [1.0, 0.0], r.json()
        bad = client.post(
            "/v1/rewards", content=b'{"items": [}', headers={"content-type": "application/json"}
        )
        assert bad.status_code == 422 and bad.headers["content-type"] == "application/problem+json"
        assert "JSON" in bad.json()["detail"], bad.json()
