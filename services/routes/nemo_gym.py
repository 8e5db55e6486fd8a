"""NeMo Gym resources-server routes over referee sessions.

``POST /nemo-gym/{env}/seed_session``  the row: a session opened, its id in a cookie, ``{}`` back
``POST /nemo-gym/{env}/verify``        the row echoed with ``reward`` (a session opened from the
                                       row when no cookie names one)
``POST /nemo-gym/{env}/close_session`` the cookie's session closed
``POST /nemo-gym/{env}/{tool_name}``   one of the session's tools

The cookie carries the referee session id itself, so any api process can read it. Only the
public methods of ``request.app.state.sessions`` are used. ``/reset``, ``/step``,
``/close`` are the Gymnasium variant. NeMo Gym itself launches the shipped folder
integrations/nemo_gym/resources_servers/referee, which forwards here.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import PlainTextResponse
from starlette.convertors import Convertor, register_url_convertor

from referee.client.errors import InvalidRequest, NotFound
from referee.client.models import Problem
from referee.client.session_models import (
    CreateSessionRequest,
    SessionReward,
    StepMessage,
    StepRequest,
    StepResponse,
    ToolCall,
    ToolCallFunction,
    ToolCallResponse,
    VerifyRequest,
)

__all__ = ["COOKIE", "router"]

COOKIE = "referee_nemo_gym___{env}"
_PROBLEMS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "Missing or unknown API key"},
    404: {"model": Problem, "description": "Unknown environment, or no (or a closed) session"},
    409: {"model": Problem, "description": "The episode is over"},
    422: {"model": Problem, "description": "A row the environment cannot use"},
    503: {"model": Problem, "description": "Too many live sessions (Retry-After), or no sandbox"},
}
router = APIRouter(prefix="/nemo-gym/{env}", tags=["nemo-gym"], responses=_PROBLEMS)

_GYM_FIELDS = ("responses_create_params", "response", "reward", "reward_components", "seed")


def _open(env: str, row: dict[str, Any]) -> CreateSessionRequest:
    seed = row.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise InvalidRequest(f"the row's `seed` must be an integer, not {seed!r:.80}")
    return CreateSessionRequest(env=env, task=_task(row), seed=seed)


def _task(row: dict[str, Any]) -> dict[str, Any]:
    """The referee task of a NeMo Gym row: the row less NeMo Gym's own rollout fields; NeMo
    Gym's ``expected_answer`` is the ``reference`` when the row has none."""
    task = {k: v for k, v in row.items() if k not in _GYM_FIELDS}
    if "reference" not in task and "expected_answer" in task:
        task["reference"] = task.pop("expected_answer")
    if "prompt" not in task:  # NeMo Gym rows carry the prompt as the Responses API's input
        params = row.get("responses_create_params")
        given = params.get("input") if isinstance(params, dict) else None
        if isinstance(given, str) and given:
            task["prompt"] = given
        elif isinstance(given, list) and given:
            task["prompt"] = [
                m for m in given if isinstance(m, dict) and isinstance(m.get("content"), str)
            ] or None
            if task["prompt"] is None:
                del task["prompt"]
    return task


def _answer(response: Any) -> str | None:
    """The last assistant text of a Responses API object (``output`` items)."""
    if not isinstance(response, dict):
        return None
    parts = [
        str(part.get("text", ""))
        for item in response.get("output") or []
        if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text"
    ]
    return "".join(parts) if parts else None


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as e:
        raise InvalidRequest(f"the body is not JSON: {e}") from e
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object (the dataset row)")
    return body


@router.post("/seed_session")
async def seed_session(env: str, request: Request, response: Response) -> dict[str, Any]:
    row = await _body(request)
    created = await request.app.state.sessions.create(_open(env, row))
    response.set_cookie(COOKIE.format(env=env), created.session_id, httponly=True)
    return {}


@router.post("/verify")
async def verify(env: str, request: Request) -> dict[str, Any]:
    row = await _body(request)
    if "response" not in row:
        raise InvalidRequest("the row has no `response` (the model's Responses API output)")
    sessions = request.app.state.sessions
    sid = request.cookies.get(COOKIE.format(env=env))
    opened = sid is None
    if sid is None:
        sid = (await sessions.create(_open(env, row))).session_id
    out = dict(row)
    try:
        result: SessionReward = await sessions.verify(
            sid, VerifyRequest(response=_answer(row["response"]))
        )
    except NotFound as e:
        if opened:
            raise
        # the seeded session is gone (reaped, its holder lost): referee failed, not the model
        out.update(reward=0.0, reward_components={"score": 0.0}, mask_sample=True)
        out.update(failure_kind="session_lost", failure_reason=f"session lost: {e}")
        return out
    finally:
        if opened:
            await sessions.close_session(sid)
    out["reward"] = float(result.score or 0.0)
    out["reward_components"] = {"score": float(result.score or 0.0), "turns": result.total}
    if not result.valid:
        out["mask_sample"] = True
        outcome = result.details.get("outcome")
        out["failure_kind"] = "session_lost" if outcome == "session_lost" else "verifier_error"
        out["failure_reason"] = str(result.details.get("error") or result.details)
    return out


@router.post("/close_session")
async def close_session(env: str, request: Request, response: Response) -> dict[str, Any]:
    sid = request.cookies.get(COOKIE.format(env=env))
    if sid is not None:
        await request.app.state.sessions.close_session(sid)
        response.delete_cookie(COOKIE.format(env=env))
    return {}


@router.get("/reverify_mode")
async def reverify_mode(env: str) -> str:
    """A verify opens its own session from the row when no cookie names one: re-runnable."""
    return "stateless"


@router.post("/aggregate_metrics")
async def aggregate_metrics(env: str, request: Request) -> dict[str, Any]:
    body = await _body(request)
    rows = body.get("verify_responses")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise InvalidRequest("`verify_responses` must be a list of /verify responses")
    rewards = [float(r.get("reward", 0.0)) for r in rows]
    masked = sum(1 for r in rows if r.get("mask_sample"))
    mean = sum(rewards) / len(rewards) if rewards else 0.0
    metrics = {"mean/reward": mean, "count": float(len(rows)), "masked": float(masked)}
    return {"group_level_metrics": [], "agent_metrics": metrics, "key_metrics": metrics}


@router.post("/reset")
async def reset(env: str, request: Request, response: Response) -> dict[str, Any]:
    """Gymnasium: open the episode. The observation is sent only when the row's own input is
    empty (a generated task's prompt); otherwise the model already has the prompt."""
    row = await _body(request)
    created = await request.app.state.sessions.create(_open(env, row))
    response.set_cookie(COOKIE.format(env=env), created.session_id, httponly=True)
    params = row.get("responses_create_params")
    has_input = isinstance(params, dict) and bool(params.get("input"))
    observation = created.observation if isinstance(created.observation, str) else None
    info = {"supports_explicit_close": True, "supports_step_idempotency": True}
    return {"observation": None if has_input else observation, "info": info}


def _message(response: Any) -> StepMessage:
    """This turn's Responses object as an assistant message: its text and function calls."""
    if not isinstance(response, dict) or not isinstance(response.get("output"), list):
        raise InvalidRequest("`response` must be a Responses API object with an `output` list")
    calls = [
        ToolCall(
            id=item.get("call_id"),
            function=ToolCallFunction(
                name=str(item.get("name", "")), arguments=item.get("arguments") or "{}"
            ),
        )
        for item in response["output"]
        if isinstance(item, dict) and item.get("type") == "function_call"
    ]
    return StepMessage(content=_answer(response), tool_calls=calls)


@router.post("/step")
async def step(env: str, request: Request) -> dict[str, Any]:
    row = await _body(request)
    sid = request.cookies.get(COOKIE.format(env=env))
    if sid is None:
        raise NotFound("no session: call /reset first and send its cookie")
    rid = row.get("_ng_step_request_id")
    body = StepRequest(response=_message(row.get("response")), request_id=str(rid) if rid else None)
    result: StepResponse = await request.app.state.sessions.step(sid, body)
    outputs = [{"call_id": t.call_id, "output": t.output} for t in result.tool_outputs]
    return {
        "observation": result.observation,
        "reward": result.reward,
        "terminated": result.terminated,
        "truncated": result.truncated,
        "info": {**result.info, "tool_outputs": outputs},
    }


@router.post("/close")
async def close(env: str, request: Request, response: Response) -> dict[str, Any]:
    return await close_session(env, request, response)


class _ToolName(Convertor[str]):
    """A tool's name, never ``reverify_mode`` (a GET of its own): so that route's ``Allow``
    is GET alone, not GET and this route's POST."""

    regex = "(?!reverify_mode$)[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("nemo_gym_tool", _ToolName())


@router.post("/{tool_name:nemo_gym_tool}", response_class=PlainTextResponse)
async def tool(env: str, tool_name: str, request: Request) -> str:
    sid = request.cookies.get(COOKIE.format(env=env))
    if sid is None:
        raise NotFound("no session: call /seed_session first and send its cookie")
    arguments = await _body(request)
    result: ToolCallResponse = await request.app.state.sessions.tool(
        sid, tool_name, arguments, None
    )
    return result.output  # NeMo Gym hands a tool's body to the model verbatim
