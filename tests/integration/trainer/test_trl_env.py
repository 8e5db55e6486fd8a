"""The TRL ``environment_factory`` classes on a real server: the tools TRL 1.16 would pick from
each class (its own rule: public functions but reset and get_reward) and the schemas
transformers' ``get_json_schema`` (what TRL's chat templates and vLLM client use) makes of
them; a python rollout through reset, the tools, answer and get_reward."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from transformers.utils import get_json_schema

from referee.trainer_adapter.trl_env import (
    CodeSession,
    ProceduralSession,
    PythonSession,
    SessionEnvironment,
    completion_reward,
)


def trl_tools(environment: object) -> list[Any]:
    """The methods GRPOTrainer turns into tools (trl/trainer/grpo_trainer.py, 1.16.0)."""
    return [
        getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


@pytest.mark.parametrize(
    ("cls", "names"),
    [
        (PythonSession, {"answer", "python"}),
        (CodeSession, {"answer", "run_tests"}),
        (ProceduralSession, {"answer"}),
    ],
)
def test_trl_extracts_each_tool_schema(cls: type[SessionEnvironment], names: set[str]) -> None:
    env = cls("http://127.0.0.1:9")  # nothing is called
    schemas = [get_json_schema(tool) for tool in trl_tools(env)]
    assert {s["function"]["name"] for s in schemas} == names
    for schema in schemas:
        params = schema["function"]["parameters"]
        assert schema["function"]["description"]
        assert params["required"] == list(params["properties"])
        for prop in params["properties"].values():
            assert prop["type"] == "string" and prop["description"]
    env._release()


def test_a_python_rollout_is_rewarded_by_its_session(server: Any) -> None:
    env = PythonSession(str(server.url), max_turns=4)
    row = {"prompt": [{"role": "user", "content": "What is 2**100 mod 7?"}], "reference": "2"}
    assert env.reset(**row) is None  # the row's prompt is the prompt
    tools = {t.__name__: t for t in trl_tools(env)}
    assert tools["python"](code="r = pow(2, 100, 7)") == "(no output)\n"
    assert tools["python"](code="r") == "2\n"
    assert "recorded" in tools["answer"](answer="\\boxed{2}")
    assert "over" in tools["answer"](answer="\\boxed{3}")
    assert env.get_reward() == 1.0
    # the completion's own text, scored on the same session
    wrong = [{"role": "assistant", "content": "so it is \\boxed{4}"}]
    assert completion_reward([wrong], [env]) == [0.0]
    first = env._session_id
    env.reset(**row)  # the pooled instance's next rollout: a new session, the old one closed
    assert env._session_id != first
    assert env.get_reward() == 0.0  # no answer yet
    env._release()


def test_a_generated_procedural_problem_is_the_observation(server: Any) -> None:
    env = ProceduralSession(str(server.url), max_turns=2)
    observation = env.reset(task="basic_arithmetic", seed=3)
    assert observation and "<answer>" in observation
    feedback = env.answer("<answer>zzz</answer>")
    assert "not correct" in feedback
    assert env.get_reward() == 0.0
    env._release()


def test_get_reward_is_none_when_referee_and_not_the_model_failed(server: Any) -> None:
    from referee.client.errors import TransportError
    from referee.client.sdk import RefereeClient
    from referee.services.launcher import free_port
    from referee.trainer_adapter.trl_env import close_sessions

    row = {"prompt": "What is 1+1?", "reference": "2"}
    gone = PythonSession(str(server.url))
    gone.reset(**row)
    gone._client.close_session(gone._sid())  # what the reaper does to an idle session
    assert gone.get_reward() is None
    # the server unreachable: raised by default (TRL stops), None when asked
    strict = PythonSession(str(server.url))
    lenient = PythonSession(str(server.url), on_error="none")
    dead = f"http://127.0.0.1:{free_port()}"
    for env in (strict, lenient):
        env.reset(**row)
        env._client.close()
        env._client = RefereeClient(dead, timeout=5, max_retries=0)
    with pytest.raises(TransportError):
        strict.get_reward()
    assert lenient.get_reward() is None
    with pytest.raises(ValueError, match="on_error"):
        PythonSession(str(server.url), on_error="zero")  # type: ignore[arg-type]
    # close_sessions closes what is open in this process, and only that
    live = [PythonSession(str(server.url)) for _ in range(2)]
    ids = []
    for env in live:
        env.reset(**row)
        ids.append(env._sid())
    strict._session_id = lenient._session_id = None  # their server is gone
    assert close_sessions() >= 2
    with RefereeClient(str(server.url)) as client:
        for sid in ids:
            assert client.session(sid).state == "closed"
    for env in (gone, strict, lenient, *live):
        env._release()
