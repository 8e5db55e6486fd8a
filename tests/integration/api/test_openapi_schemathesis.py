"""schemathesis (pinned in the dev extra) over every operation of the OpenAPI document, against
a real server on the loopback: no answer may be a server error, and every answer must agree with
the document (status code, content type, headers, body schema, ``Allow`` on a 405).

The server has every optional part a request may need (a tiny judge and policy model built from
a config, the bubblewrap sandbox), so no operation answers 503 for want of one. The run is
bounded: a fixed seed, a few examples per operation, ``--max-time``, and pytest's timeout.

Checks left out, and why:

* ``positive_data_acceptance``: some rules are validators the schema cannot state (a
  ``format`` grader's pattern name, a grader passed as JSON in ``?grader=``); a request that
  breaks them is refused with 422 although its shape matches the document.
* ``negative_data_rejection``: pydantic's lax mode reads a JSON ``true``/``false`` as 1/0
  where a number is asked for (and 0/1 as a boolean); every other request that breaks the
  schema is refused (the checks above see every answer it gets).
* ``use_after_free`` and ``ensure_resource_availability``: ``DELETE /v1/jobs/{id}`` cancels a
  job, whose record stays readable (that is the API: a cancelled job's state and progress).
* ``ignored_auth``: the document declares no security scheme; the API key is tested in
  test_auth_and_limits.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.services.launcher import TINY_MODELS_ENV

EXCLUDED = [
    "positive_data_acceptance",
    "negative_data_rejection",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
]


@pytest.fixture(scope="module")
def full_server(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> Any:
    srv = referee_server_factory(
        Path(tmp_path_factory.mktemp("schemathesis")),
        {**TINY_MODELS_ENV, "REFEREE_MAX_BATCH_ITEMS": "64"},
        "schemathesis",
    )
    # The first problem generation imports reasoning-gym: done once here, not inside a
    # schemathesis request with its timeout.
    httpx.post(srv.url + "/v1/curriculum/problems", json={"n": 1}, timeout=120)
    return srv


@pytest.mark.long  # runs to its --max-time (100 s)
@pytest.mark.timeout(600)
def test_schemathesis_finds_no_server_error_and_no_mismatch(
    full_server: Any, tmp_path: Path
) -> None:
    assert full_server.url.startswith("http://127.0.0.1:")  # the loopback only
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        f"{full_server.url}/openapi.json",
        "--max-examples",
        "4",
        "--max-time",
        "100",
        "--seed",
        "0",
        "--workers",
        "1",
        "--request-timeout",
        "60",
        "--exclude-checks",
        ",".join(EXCLUDED),
        "--no-color",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path),
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=540, cwd=tmp_path)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-12000:]
    tested = re.search(r"Tested: (\d+)", output)
    assert tested is not None and int(tested.group(1)) >= 20, output[-4000:]  # every operation
    assert "Traceback" not in full_server.log.read_text(errors="replace"), full_server.log_tail()
