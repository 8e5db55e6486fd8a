"""referee's veRL session tool and its reward function, driven by veRL 0.9.1's own code in the
cached veRL environment (peer_code_compat.verl_python; see verl_tool_run.py): veRL's tool
registry reads the YAML written from the server's schemas, veRL's ``_call_tool`` runs each call
(a tool created and released per call) and two trajectories keep two interpreters, and veRL's
``naive`` reward-loop manager scores each trajectory from its session."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any
from typing import Any as Server

import httpx
import pytest

from .peer_code_compat import run_script, verl_python

HERE = Path(__file__).resolve().parent
# veRL's agent loop package (its ``verl-core`` extra) needs this beyond the reward path's set
AGENT_LOOP_REQUIREMENTS = ["cachetools==8.0.2"]


def agent_loop_python() -> Path:
    """The cached veRL environment, with what ``verl.experimental.agent_loop`` imports."""
    python = verl_python()
    probe = [str(python), "-c", "import verl.experimental.agent_loop.tool_agent_loop"]
    if subprocess.run(probe, capture_output=True, timeout=300).returncode != 0:
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, *AGENT_LOOP_REQUIREMENTS], check=True, timeout=600)
    return python


@pytest.mark.long  # veRL's own tool registry, agent loop and reward loop end to end (a minute)
@pytest.mark.timeout(1800)  # the first run builds veRL's environment (minutes), then it is cached
def test_verl_tool_registry_calls_and_reward(tmp_path: Path, server: Server) -> None:
    spec = {
        "referee_url": server.url,
        "yaml": str(tmp_path / "tools.yaml"),
        "tokenizer_dir": str(tmp_path / "tokenizer"),
    }
    got: dict[str, Any] = run_script(agent_loop_python(), HERE / "verl_tool_run.py", spec, tmp_path)
    assert got["verl_version"] == "0.9.1"

    # the registry built referee's class with the server's own schema of the python tool
    envs = httpx.get(server.url + "/v1/sessions/environments", timeout=30).json()
    [python_env] = [e for e in envs["environments"] if e["name"] == "python"]
    assert got["classes"] == ["referee.trainer_adapter.verl_tool.RefereeSessionTool"] * len(
        python_env["tools"]
    )
    served = {t["function"]["name"]: t["function"]["parameters"] for t in python_env["tools"]}
    seen = {t["function"]["name"]: t["function"]["parameters"] for t in got["tools"]}
    assert seen.keys() == served.keys() and "python" in seen
    assert seen["python"]["properties"].keys() == served["python"]["properties"].keys()
    # the command the docs give writes the same YAML
    cli = subprocess.run(
        [str(agent_loop_python()), "-m", "referee.trainer_adapter.verl_tool",
         "--url", server.url, "--env", "python", "--max-turns", "8"],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr[-2000:]
    assert json.loads(cli.stdout) == json.loads((tmp_path / "tools.yaml").read_text())

    # one interpreter per trajectory, across veRL's create/execute/release per call
    first, second = got["trajectories"]
    assert first["outputs"][:2] == ["(no output)\n", "42\n"]
    assert "NameError" in first["outputs"][2]  # an error is the model's to read
    assert second["outputs"] == ["(no output)\n", "1024\n"]
    sessions = [t["extra_fields"]["referee_session"] for t in (first, second)]
    assert sessions[0]["session_id"] != sessions[1]["session_id"]
    assert [s["request_id"] for s in sessions] == [first["request_id"], second["request_id"]]

    # veRL's naive manager: the session verified on the decoded answer, then closed
    rewards = got["rewards"]
    assert [r["reward_score"] for r in rewards] == [1.0, 0.0, 1.0], rewards
    assert [r["reward_extra_info"]["valid"] for r in rewards] == [True, True, True]
    assert [r["reward_extra_info"]["referee_failed"] for r in rewards] == [0.0, 0.0, 0.0]
    for state in sessions:
        closed = httpx.get(f"{server.url}/v1/sessions/{state['session_id']}", timeout=30)
        assert closed.status_code == 200, closed.text
        assert closed.json()["state"] == "closed" and closed.json()["tool_calls"] > 0


def test_reward_without_the_server_is_not_valid() -> None:
    """referee unreachable: a 0.0 that says nothing about the response, flagged for masking."""
    from referee.trainer_adapter import verl_session_reward

    extra = {"referee_session": {"session_id": "s-1", "referee_url": "http://127.0.0.1:9"}}
    out = verl_session_reward.compute_score("referee", "\\boxed{1}", "1", extra)
    assert out == {"score": 0.0, "valid": False, "acc": 0.0, "referee_failed": 1.0, "turns": 0}
    verl_session_reward.reset_clients()
