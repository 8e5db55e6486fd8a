"""A server started with API keys and a small body limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from typing import Any as Server

import httpx
import pytest

ITEM = {"id": "1", "response": "\\boxed{1}", "grader": {"type": "math", "reference": "1"}}


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Server:
    return referee_server_factory(
        Path(tmp_path_factory.mktemp("locked")),
        {
            "REFEREE_API_KEYS": "k1, k2",
            "REFEREE_MAX_BODY_BYTES": "4096",
            "REFEREE_MATH_WORKERS": "1",
        },
        "locked",
    )


def test_api_key_required(locked: Server) -> None:
    r = httpx.post(locked.url + "/v1/rewards", json={"items": [ITEM]})
    assert r.status_code == 401 and r.json()["type"] == "unauthorized"
    r = httpx.post(
        locked.url + "/v1/rewards",
        json={"items": [ITEM]},
        headers={"authorization": "Bearer wrong"},
    )
    assert r.status_code == 401 and "not one this server accepts" in r.json()["detail"]
    for headers in ({"authorization": "Bearer k2"}, {"x-api-key": "k1"}):
        r = httpx.post(locked.url + "/v1/rewards", json={"items": [ITEM]}, headers=headers)
        assert r.status_code == 200 and r.json()["rewards"][0]["score"] == 1.0
    assert httpx.get(locked.url + "/healthz").status_code == 200  # health needs no key


def test_body_limit(locked: Server) -> None:
    big = {**ITEM, "response": "x" * 10_000}
    r = httpx.post(locked.url + "/v1/rewards", json={"items": [big]}, headers={"x-api-key": "k1"})
    assert r.status_code == 413 and "limit is 4096" in r.json()["detail"]


RUN_CODE = {"code": "print(input())", "language": "python", "stdin": "hi\n"}


def test_run_code_needs_the_key_by_default(locked: Server) -> None:
    r = httpx.post(locked.url + "/run_code", json=RUN_CODE, timeout=60)
    assert r.status_code == 401
    r = httpx.post(locked.url + "/run_code", json=RUN_CODE, headers={"x-api-key": "k1"}, timeout=60)
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "hi\n"


def test_run_code_can_be_left_open_for_verl(
    tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any
) -> None:
    srv = referee_server_factory(
        Path(tmp_path_factory.mktemp("open-compat")),
        {
            "REFEREE_API_KEYS": "k1",
            "REFEREE_COMPAT_WITHOUT_API_KEY": "true",
            "REFEREE_MATH_WORKERS": "1",
        },
        "open-compat",
    )
    r = httpx.post(srv.url + "/run_code", json=RUN_CODE, timeout=60)
    assert r.status_code == 200 and r.json()["status"] == "Success"
    assert httpx.post(srv.url + "/v1/rewards", json={"items": [ITEM]}).status_code == 401
