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

import asyncio
import json
from typing import Any

from fastapi import Request, Response
from fastapi.responses import PlainTextResponse
from starlette.convertors import StringConvertor, register_url_convertor

from referee.client.errors import InvalidRequest, NotFound
from referee.client.grader_specs import pairs_as_tests, tool_call_blocks
from referee.client.packed_tests import plain_within_budget
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
from referee.services.openapi_doc import api_key_router

__all__ = ["COOKIE", "router"]

COOKIE = "referee_nemo_gym___{env}"
router = api_key_router(
    "/nemo-gym/{env}",
    "nemo-gym",
    {
        404: "Unknown environment, or no (or a closed) session",
        409: "The episode is over",
        422: "A row the environment cannot use",
        503: "Too many live sessions (Retry-After), or no sandbox",
    },
)

_GYM_FIELDS = ("responses_create_params", "response", "reward", "reward_components", "seed")


def _open(env: str, row: dict[str, Any]) -> CreateSessionRequest:
    seed = row.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise InvalidRequest(f"the row's `seed` must be an integer, not {seed!r:.80}")
    return CreateSessionRequest(env=env, task=_task(row), seed=seed)


def _task(row: dict[str, Any]) -> dict[str, Any]:
    """The referee task of a NeMo Gym row: the row less NeMo Gym's own rollout fields, with the
    grading fields of NeMo Gym's own resources servers read as referee graders (a row's own
    ``grader`` comes first); see :func:`gym_grading`."""
    task = {k: v for k, v in row.items() if k not in _GYM_FIELDS}
    gym_grading(task)
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


_PACKED_MAX = 64 << 20  # bytes a packed unit_tests field may inflate to


def gym_grading(task: dict[str, Any]) -> None:
    """Read the grading fields of NeMo Gym's own resources servers onto ``task`` (in place),
    unless the row names its ``grader`` (or, for tests, its ``tests``):

    - ``instruction_id_list`` + ``kwargs`` (its instruction_following server, IFEval rows): an
      ``instruction_following`` grader, reward 1 only when every instruction is followed, as
      that server gives it;
    - ``options`` (``[{"A": "text"}, ...]``) + ``expected_answer`` (a letter; its mcqa server):
      a ``multiple_choice`` grader over the options' letters;
    - ``verifier_metadata.unit_tests`` (``{inputs, outputs, fn_name?}``, LiveCodeBench's form,
      or ``{"packed": base64 zlib JSON}``; its code_gen server): the code environment's
      ``hidden_tests`` (graded, never shown), stdin/stdout tests, or calls of ``fn_name`` with
      each input's JSON lines as arguments;
    - ``expected_answers`` (``[{"name", "arguments"}]``; its xlam_fc server): a ``tool_call``
      grader, all or nothing, the calls in any order, only the expected arguments compared, as
      that server matches the response's ``function_call`` items;
    - ``gt_sql`` + ``db_id`` (its bird_sql server): an ``sql`` grader on the server's SQLite
      file of that name, BIRD's set comparison, the query the last ```sql block (none: 0);
    - ``schema_str`` (+ ``schema_type`` json, yaml or toml, ``response_mode``; its
      structured_outputs server): a ``json_schema`` grader of the schema made strict as that
      server makes it, on the payload it validates;
    - ``expected_answer`` alone (its math servers): the ``reference``.
    """
    metadata = task.get("verifier_metadata")
    if "grader" not in task and "instruction_id_list" in task:
        task["grader"] = {
            "type": "instruction_following",
            "instruction_id_list": task["instruction_id_list"],
            "kwargs": task.get("kwargs"),
            "aggregate": "all",
        }
    elif "grader" not in task and isinstance(task.get("gt_sql"), str) and task.get("db_id"):
        task["grader"] = {  # its bird_sql server: BIRD's execution match on the row's database
            "type": "sql",
            "reference": task["gt_sql"],
            "database": str(task["db_id"]),
            "compare": "set",
            "extract": "fence",
        }
    elif _structured(task):
        task["grader"] = _structured_grader(task)
    elif _xlam(task):
        task["grader"] = {
            "type": "tool_call",
            "reference": task["expected_answers"],
            "scoring": "exact",
            "extra_arguments": "ignored",
        }
    elif "grader" not in task and task.get("options") is not None:
        task["grader"] = _choice_grader(task.get("options"), task.get("expected_answer"))
        task.pop("reference", None)
    if (
        isinstance(metadata, dict)
        and metadata.get("unit_tests") is not None
        and "tests" not in task
        and "hidden_tests" not in task
    ):
        task["hidden_tests"] = _unit_tests(metadata["unit_tests"])
        task.setdefault("comparison", "lcb")  # LiveCodeBench's evaluator: NeMo Gym runs its copy
    if "reference" not in task and "grader" not in task and "expected_answer" in task:
        task["reference"] = task.pop("expected_answer")


def _row_answer(row: dict[str, Any]) -> str | None:
    """What the row's grader scores of its ``response``: for xlam_fc rows the function calls
    alone, for structured_outputs rows the payload that server validates, else the text."""
    if _xlam(row):
        return _answer(row["response"], calls_only=True)
    if _structured(row):
        return _structured_answer(row)
    grader = row.get("grader")
    graded_calls = isinstance(grader, dict) and grader.get("type") == "tool_call"
    # the calls only where a tool_call grader reads them: a math answer given after a tool
    # call (math_with_code's rows) is its text, not the call's arguments
    return _answer(row["response"], with_calls=graded_calls)


async def _row_answer_off_loop(row: dict[str, Any]) -> str | None:
    """:func:`_row_answer`, a structured row's parse (YAML is slow on megabytes) off the loop."""
    if not _structured(row):
        return _row_answer(row)
    return await asyncio.to_thread(_row_answer, row)


def _structured(row: dict[str, Any]) -> bool:
    """Whether the row is graded as NeMo Gym's structured_outputs grades it (its
    ``schema_str``, no grader of its own)."""
    return "grader" not in row and isinstance(row.get("schema_str"), str)


_STRUCTURED_TYPES = ("json", "yaml", "toml")


def _structured_grader(task: dict[str, Any]) -> dict[str, Any]:
    """structured_outputs' check as a ``json_schema`` grader: the schema made strict as that
    server makes it (every object's properties all required, no others), ``format`` an
    annotation as there (its OpenAPI validator is given no format checker), the value the
    whole payload (:func:`_structured_answer`)."""
    kind = str(task.get("schema_type") or "json").lower()
    if kind not in _STRUCTURED_TYPES:
        raise InvalidRequest(
            f"a structured_outputs row of schema_type {kind!r}: referee grades json, yaml and "
            "toml ones (a row's own `grader` can score others)"
        )
    try:
        schema = json.loads(task["schema_str"])
    except (ValueError, RecursionError) as e:
        raise InvalidRequest(f"the row's `schema_str` is not JSON: {e}") from e
    _strictify(schema)
    return {"type": "json_schema", "schema": schema, "extract": "none"}


def _strictify(schema: Any, depth: int = 0) -> None:
    """In place: each object (reached through objects, as structured_outputs walks them) with
    ``properties`` requires them all and allows no others."""
    if not isinstance(schema, dict) or depth > 200:
        return
    if "properties" in schema:
        schema["required"] = list(schema["properties"])
        schema["additionalProperties"] = False
    for value in schema.values():
        _strictify(value, depth + 1)


def _structured_answer(row: dict[str, Any]) -> str:
    """The value structured_outputs validates, as JSON text (``""``: none, a 0): in
    ``response_mode: tool_call`` the arguments of the response's one function call (of
    ``tool_name`` when given; its ``tool_payload_key`` when given), else the response's text,
    a YAML or TOML one parsed."""
    response = row["response"] if isinstance(row.get("response"), dict) else {}
    if row.get("response_mode") == "tool_call":
        if response.get("error") is not None:
            return ""
        items = [i for i in response.get("output") or [] if isinstance(i, dict)]
        calls = [i for i in items if i.get("type") == "function_call"]
        if len(calls) != 1 or (row.get("tool_name") and calls[0].get("name") != row["tool_name"]):
            return ""
        arguments = calls[0].get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                return ""
        if not isinstance(arguments, dict):
            return ""
        key = row.get("tool_payload_key")
        if key:
            if key not in arguments:
                return ""
            arguments = arguments[key]
        return json.dumps(arguments)
    text = _answer(response, with_calls=False) or ""
    kind = str(row.get("schema_type") or "json").lower()
    if kind == "json" or not text.strip():
        return text
    try:
        if kind == "yaml":
            import yaml

            value = yaml.safe_load(text)
        else:
            import tomllib

            value = tomllib.loads(text)
    except Exception:  # the peer's parse error: no value
        return ""
    if not plain_within_budget(value, max_nodes=2 * len(text) + 100):
        return ""  # YAML's aliases unfold past the text's own size: a bomb, no value
    return json.dumps(value, default=str)


def _xlam(row: dict[str, Any]) -> bool:
    """Whether the row is graded as NeMo Gym's xlam_fc grades it (its ``expected_answers``,
    no grader of its own): by the response's function calls alone."""
    return "grader" not in row and isinstance(row.get("expected_answers"), list)


def _choice_grader(options: Any, expected: Any) -> dict[str, Any]:
    letters: list[str] = []
    if not isinstance(options, list) or not options:
        raise InvalidRequest("the row's `options` must be a list of {letter: text} objects")
    for option in options:
        key = next(iter(option), None) if isinstance(option, dict) and len(option) == 1 else None
        if not isinstance(key, str) or len(key) != 1 or not key.isascii() or not key.isalpha():
            raise InvalidRequest(
                f"each of the row's `options` is one {{letter: text}} object, not {option!r:.80}"
            )
        if key.upper() in letters:
            raise InvalidRequest(f"the row's `options` name the letter {key.upper()} twice")
        letters.append(key.upper())
    if not isinstance(expected, str) or expected.strip().upper() not in letters:
        raise InvalidRequest(
            f"the row's `expected_answer` must be one of its options' letters {letters}, "
            f"not {expected!r:.40}"
        )
    return {
        "type": "multiple_choice",
        "reference": expected.strip().upper(),
        "choices": "".join(letters),
    }


def _unpack(packed: Any) -> Any:
    import base64
    import json
    import zlib

    try:
        raw = base64.b64decode(packed, validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, _PACKED_MAX)
        if inflater.unconsumed_tail:
            raise InvalidRequest(
                f"verifier_metadata.unit_tests.packed inflates past {_PACKED_MAX >> 20} MiB"
            )
        return json.loads(data)
    except (ValueError, TypeError, zlib.error) as e:
        raise InvalidRequest(
            f"verifier_metadata.unit_tests.packed is not base64 zlib JSON: {e}"
        ) from e


def _unit_tests(spec: Any) -> list[dict[str, Any]]:
    if isinstance(spec, dict) and "packed" in spec:
        unpacked = _unpack(spec["packed"])
        if not isinstance(unpacked, dict):
            raise InvalidRequest("verifier_metadata.unit_tests.packed must hold an object")
        spec = {**unpacked, "fn_name": spec.get("fn_name", unpacked.get("fn_name"))}
    if not isinstance(spec, dict):
        raise InvalidRequest("verifier_metadata.unit_tests must be {inputs, outputs, fn_name?}")
    inputs, outputs, fn_name = spec.get("inputs"), spec.get("outputs"), spec.get("fn_name")
    if (
        not isinstance(inputs, list)
        or not isinstance(outputs, list)
        or len(inputs) != len(outputs)
        or not inputs
        or not all(isinstance(x, str) for x in [*inputs, *outputs])
    ):
        raise InvalidRequest(
            "verifier_metadata.unit_tests needs `inputs` and `outputs`: lists of strings of the "
            "same, non-zero length"
        )
    tests = pairs_as_tests(list(zip(inputs, outputs, strict=True)), fn_name or None)
    if tests is None:
        raise InvalidRequest(
            "verifier_metadata.unit_tests: a call test's input lines must be JSON (one "
            "argument a line)"
        )
    return tests


def _answer(response: Any, calls_only: bool = False, with_calls: bool = True) -> str | None:
    """The assistant text of a Responses API object (its ``output`` messages), and its
    ``function_call`` items as the Hermes blocks the ``tool_call`` grader reads (NeMo Gym's
    tool-calling servers, xlam_fc's, grade those items). ``calls_only``: the items alone, as
    xlam_fc reads them (calls written in the text are words there)."""
    if not isinstance(response, dict):
        return None
    items = [item for item in response.get("output") or [] if isinstance(item, dict)]
    parts = [
        str(part.get("text", ""))
        for item in items
        if item.get("type") == "message" and not calls_only
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text"
    ]
    calls = [item for item in items if item.get("type") == "function_call" and with_calls]
    blocks = tool_call_blocks(calls)
    if not parts and not blocks:
        return "" if calls_only else None  # no call made: an answer, not the last one
    return "\n".join(["".join(parts), *blocks]) if blocks else "".join(parts)


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
            sid, VerifyRequest(response=await _row_answer_off_loop(row))
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


class _ToolName(StringConvertor):
    """A tool's name, never ``reverify_mode`` (a GET of its own): so that route's ``Allow``
    is GET alone, not GET and this route's POST."""

    regex = "(?!reverify_mode$)[^/]+"


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
