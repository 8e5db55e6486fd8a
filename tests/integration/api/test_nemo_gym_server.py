"""The shipped NeMo Gym resources server (integrations/nemo_gym/resources_servers/referee)
run by NeMo Gym 0.7.0's own code against a real referee server: NeMo Gym's classes build it,
its session middleware signs the cookie, its models validate every body, and its own
``check_resources_session_contract`` checks the Environment Server lifecycle. The driver is
tests/integration/api/nemo_gym_run.py, run in NeMo Gym's cached environment."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from nemo_gym_peer import nemo_gym_python

from referee.services.launcher import Server

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, referee_server_factory: Any) -> str:
    env = {"REFEREE_SANDBOX_SLOTS": "2"}
    server: Server = referee_server_factory(tmp_path_factory.mktemp("nemo-srv"), env, "nemo-srv")
    return str(server.url)


def _dead_url() -> str:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.long  # NeMo Gym's own environment (built on first use), its server and client
@pytest.mark.timeout(1800)  # the first run builds NeMo Gym's environment (minutes), then cached
def test_shipped_resources_server_under_nemo_gym(url: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    done = subprocess.run(
        [str(nemo_gym_python()), str(HERE / "nemo_gym_run.py"), url, _dead_url(), str(out)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(out.read_text())
    assert got["tool_output"].strip() == "1000"  # the interpreter kept x between calls
    assert got["bad_arguments"][0] == 200 and "code" in got["bad_arguments"][1]
    assert got["right"] == {"reward": 1.0, "mask_sample": False}
    assert got["echo"] == ["1000", True, True]  # the row, the response, referee's components
    assert got["closed"] == 200
    assert "no session" in got["after_close"]  # the closed session is gone for the tools too
    assert got["wrong"] == 0.0
    assert got["reverify_mode"] == "stateless"
    assert got["typed_tool"].strip() == "42"
    first, second, opened = got["concurrent"]
    assert first == [200, 200, "42"] and second == [200, 200, "42"], got["concurrent"]
    assert opened == 1
    late, not_json, half, no_session = got["bad_input"]
    assert late[0] == 409 and "already closed" in late[1]
    assert not_json[0] == 422 and "not JSON" in not_json[1]
    assert half[0] == 422 and "ResourcesSeedSessionRequest" in half[1]
    assert no_session[0] == 404 and "no session" in no_session[1]
    assert got["down_seed"] == 502
    assert got["down"]["mask_sample"] is True and got["down"]["reward"] == 0.0
    assert got["down"]["failure_kind"] == "transport_unreachable" and got["down_kind_known"]
    assert got["refused"][0] == 422 and "`seed` must be an integer" in got["refused"][1]
    agent = got["metrics"]["agent_metrics"]  # NeMo Gym's own aggregate over referee's rewards
    assert agent["mean/reward"] == 0.5 and agent["max/reward"] == 1.0


@pytest.mark.long  # NeMo Gym's own environment (built on first use) and its xlam_fc server
@pytest.mark.timeout(1800)
def test_xlam_fc_rows_score_as_nemo_gyms_own_xlam_fc_server(url: str, tmp_path: Path) -> None:
    """NeMo Gym's xlam_fc rows (``expected_answers``, the model's ``function_call`` items) at
    referee's ``/nemo-gym/python/verify`` against NeMo Gym's own xlam_fc server (the wheel's
    ``resources_servers/xlam_fc``), on the wheel's recorded rollouts and on the ways a call can
    be wrong or right (order, a call left out or added, an argument changed, left out, added,
    an int as a float or as text, arguments that are not JSON, words in place of calls): the
    same reward every time, and the recorded rollouts' rewards. The driver is
    tests/integration/api/nemo_gym_xlam.py."""
    out = tmp_path / "xlam.json"
    done = subprocess.run(
        [str(nemo_gym_python()), str(HERE / "nemo_gym_xlam.py"), url, str(out)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(out.read_text())
    assert len(results) > 60
    for case, theirs, recorded, status, ours in results:
        assert status == 200 and ours == theirs, (case, theirs, status, ours)
        assert recorded is None or recorded == theirs, (case, recorded, theirs)
    assert sum(r[2] is not None for r in results) == 5  # the wheel's rollouts
    assert {r[1] for r in results} == {0.0, 1.0}
    assert sum(r[1] for r in results) >= 15  # right ones among them, not only wrong ones


@pytest.mark.long  # NeMo Gym's own environment (built on first use) and its bird_sql server
@pytest.mark.timeout(1800)
def test_bird_sql_rows_score_as_nemo_gyms_own_bird_sql_server(
    tmp_path: Path, referee_server_factory: Any
) -> None:
    """NeMo Gym's bird_sql rows (``gt_sql``, ``db_id``) at referee's ``/nemo-gym/python/verify``
    (the database file from ``REFEREE_SQL_DATABASES_DIR``) against NeMo Gym's own bird_sql
    server (the wheel's ``resources_servers/bird_sql``) on one SQLite file both read: queries
    right and wrong, fenced as models fence them (``SQL``, inline, a bold header, two blocks,
    ``sqlite``, no fence), and right by BIRD's set comparison though written otherwise
    (DISTINCT, duplicated rows, another order): the same reward every time. The driver is
    tests/integration/api/nemo_gym_bird.py."""
    import sqlite3

    databases = tmp_path / "bird" / "dev_20240627" / "dev_databases"
    (databases / "concert").mkdir(parents=True)
    with sqlite3.connect(databases / "concert" / "concert.sqlite") as db:
        db.execute("CREATE TABLE singer(id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INT)")
        db.executemany(
            "INSERT INTO singer VALUES (?, ?, ?, ?)",
            [(i, f"singer {i % 9}", ["France", "Peru", "Japan"][i % 3], 20 + i % 31)
             for i in range(60)],
        )  # fmt: skip
    env = {"REFEREE_SQL_DATABASES_DIR": str(databases)}
    (tmp_path / "srv").mkdir()
    server: Server = referee_server_factory(tmp_path / "srv", env, "bird")
    out = tmp_path / "bird.json"
    done = subprocess.run(
        [str(nemo_gym_python()), str(HERE / "nemo_gym_bird.py"), str(server.url),
         str(tmp_path / "bird"), str(out)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(out.read_text())
    assert len(results) == 63
    for case, theirs, status, ours in results:
        assert status == 200 and ours == theirs, (case, theirs, status, ours)
    assert 15 <= sum(r[1] for r in results) <= 48  # right ones and wrong ones


@pytest.mark.long  # NeMo Gym's own environment (built on first use), its structured_outputs
@pytest.mark.timeout(1800)
def test_structured_outputs_rows_score_as_nemo_gyms_own_server(url: str, tmp_path: Path) -> None:
    """NeMo Gym's structured_outputs rows (``schema_str``, ``schema_type`` json, yaml or toml,
    ``response_mode`` text or tool_call) at referee's ``/nemo-gym/python/verify`` against NeMo
    Gym's own structured_outputs server (the wheel's), on the wheel's example rows: a value that
    validates and its breakages (a property left out or added, another type, a date that is
    not one, a fence, words; a tool call's name, count, arguments and payload key): the same
    reward every time. The driver is tests/integration/api/nemo_gym_structured.py."""
    out = tmp_path / "structured.json"
    done = subprocess.run(
        [str(nemo_gym_python()), str(HERE / "nemo_gym_structured.py"), url, str(out)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(out.read_text())
    assert len(results) > 80
    for case, theirs, status, ours in results:
        assert status == 200 and ours == theirs, (case, theirs, status, ours)
    assert 10 <= sum(r[1] for r in results) <= len(results) - 30  # right ones and wrong ones
