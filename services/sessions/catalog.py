"""The session environments this server offers, and how one is opened.

``python`` (tool-integrated math), ``procedural`` (reasoning-gym with feedback turns) and
``code`` (a test tool and hidden tests). ``GET /v1/sessions/environments`` lists them from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from referee.client.session_models import CreateSessionRequest, SessionEnvironment
from referee.services.sessions import code_env, procedural_env, python_env
from referee.services.sessions.episode import EnvContext, Episode, ToolSpec

__all__ = ["ENVIRONMENTS", "EnvInfo", "open_episode"]


@dataclass(frozen=True, slots=True)
class EnvInfo:
    name: str
    description: str
    tools: tuple[ToolSpec, ...]
    task_fields: dict[str, str]
    max_turns: int
    build: Callable[[EnvContext, CreateSessionRequest], Episode]

    def listing(self) -> SessionEnvironment:
        return SessionEnvironment(
            name=self.name,
            description=self.description,
            tools=[t.schema() for t in self.tools],
            task_fields=self.task_fields,
            max_turns=self.max_turns,
        )


ENVIRONMENTS: dict[str, EnvInfo] = {
    "python": EnvInfo(
        "python",
        "Tool-integrated reasoning: a math problem, a persistent sandboxed Python interpreter "
        "as the tool `python(code)`, the final answer (a turn without a tool call) scored by "
        "the math grader.",
        python_env.PythonEpisode.tools,
        python_env.TASK_FIELDS,
        16,
        lambda ctx, body: python_env.PythonEpisode(ctx, body.task),
    ),
    "procedural": EnvInfo(
        "procedural",
        "A reasoning-gym problem: each answer scored by the task's scorer, a wrong one gets "
        "feedback and another turn up to max_turns; the episode's result feeds the curriculum.",
        (),
        procedural_env.TASK_FIELDS,
        3,
        lambda ctx, body: procedural_env.ProceduralEpisode(ctx, body.task, body.seed),
    ),
    "code": EnvInfo(
        "code",
        "A programming task: the tool `run_tests(code)` runs the visible tests in the sandbox; "
        "the final submission (a turn without a tool call, code in a fenced block) is graded on "
        "every test, hidden ones included, which are never shown.",
        code_env.CodeEpisode.tools,
        code_env.TASK_FIELDS,
        8,
        lambda ctx, body: code_env.CodeEpisode(ctx, body.task),
    ),
}


async def open_episode(
    ctx: EnvContext, body: CreateSessionRequest, max_turns: int
) -> tuple[Episode, str | list[dict[str, Any]]]:
    """Build and open the episode; closed again if opening fails."""
    episode = ENVIRONMENTS[body.env].build(ctx, body)
    episode.max_turns = max_turns
    try:
        observation = await episode.open()
    except BaseException:
        episode.close()
        raise
    return episode, observation
