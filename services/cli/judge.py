"""``referee judge``: a rubric or GenRM judge on the responses to one prompt, from the shell.

referee judge --grader '{"type": "genrm"}' --prompt 'What is 2+2?' --response '4' --response '5'
referee judge --grader rubric.json --prompt-file q.txt --responses answers.jsonl --server URL

Without ``--server`` the judge runs in this process, from the ``REFEREE_JUDGE_*`` settings
(``transformers`` with a local model, ``openai`` with a server, ``vllm`` on a GPU). Prints one
JSON line per response, in order: ``{"index", "score", "details"}`` (``score`` is null where the
verdict could not be read, with the reason in ``details``). Exits 0, or 2 on bad input or when
no judge is configured (the message says what to set).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from referee.client.errors import InvalidRequest, RefereeError
from referee.client.models import JudgeResponse
from referee.services.jsonl import json_lines

__all__ = ["register"]


def _grader(text: str) -> dict[str, Any]:
    """The grader from inline JSON or from a JSON file."""
    source = text
    if not text.lstrip().startswith("{"):
        path = Path(text)
        if not path.is_file():
            raise InvalidRequest(f"--grader: {text!r} is neither a JSON object nor a file")
        source = path.read_text(encoding="utf-8")
    try:
        value = json.loads(source)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"--grader is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidRequest('--grader must be a JSON object, e.g. {"type": "genrm"}')
    return value


def _responses(args: argparse.Namespace) -> list[str]:
    out = list(args.response or [])
    if args.responses:
        lines = Path(args.responses).read_text(encoding="utf-8").splitlines()
        for n, value, error in json_lines(lines):
            if error is not None:
                raise InvalidRequest(f"{args.responses}:{n}: not JSON ({error.msg})") from error
            if isinstance(value, dict):
                value = value.get("response")
            if not isinstance(value, str):
                raise InvalidRequest(
                    f'{args.responses}:{n}: expected a JSON string or {{"response": "..."}}'
                )
            out.append(value)
    if not out:
        raise InvalidRequest("no responses: pass --response TEXT (repeatable) or --responses FILE")
    return out


def _locally(prompt: str, responses: list[str], grader: dict[str, Any]) -> JudgeResponse:
    """What ``POST /v1/judge`` does, in this process, with the configured judge."""
    import time

    from pydantic import ValidationError

    from referee.client.models import JudgeRequest, JudgeResult, RewardItem
    from referee.services.execution.llm import build_judge
    from referee.services.scoring.judge import require_judge, resolve_judge_leaves
    from referee.services.settings import Settings

    try:
        body = JudgeRequest.model_validate(
            {"prompt": prompt, "responses": responses, "grader": grader}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidRequest(f"{where}: {first['msg']}") from exc
    settings = Settings()
    backend = require_judge(build_judge(settings))
    items = [
        RewardItem(id=str(k), prompt=body.prompt, response=r, grader=body.grader, group="judge")
        for k, r in enumerate(body.responses)
    ]
    start = time.perf_counter()
    leaves = [body.grader.model_dump()] * len(items)
    resolved = asyncio.run(
        resolve_judge_leaves(leaves, items, backend, settings.judge_templates_dir)
    )
    return JudgeResponse(
        results=[JudgeResult(score=g["score"], details=g["details"]) for g in resolved],
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )


def _judge(args: argparse.Namespace) -> int:
    try:
        grader = _grader(args.grader)
        if args.prompt_file:
            prompt = Path(args.prompt_file).read_text(encoding="utf-8")
        elif args.prompt is not None:
            prompt = args.prompt
        else:
            raise InvalidRequest("no prompt: pass --prompt TEXT or --prompt-file FILE")
        responses = _responses(args)
        if args.server:
            from referee.client import RefereeClient

            with RefereeClient(args.server, api_key=args.api_key, max_retries=2) as client:
                answer = client.judge(prompt, responses, grader)
        else:
            answer = _locally(prompt, responses, grader)
    except (RefereeError, ValueError) as exc:  # ValueError: a REFEREE_JUDGE_* setting
        print(f"referee judge: {exc}", file=sys.stderr)
        return 2
    for k, result in enumerate(answer.results):
        line = {"index": k, "score": result.score, "details": result.details}
        print(json.dumps(line, ensure_ascii=False))
    return 0


def register(sub: Any) -> None:
    judge = sub.add_parser(
        "judge",
        help="judge responses with a rubric or GenRM judge",
        description=__doc__.split("\n\n")[0],
    )
    judge.add_argument(
        "--grader", required=True, help="a rubric or genrm grader: inline JSON or a JSON file"
    )
    judge.add_argument("--prompt", help="the prompt the responses answer")
    judge.add_argument("--prompt-file", help="read the prompt from this file")
    judge.add_argument(
        "--response", action="append", help="a response to judge (repeat for several)"
    )
    judge.add_argument(
        "--responses", help='a JSONL file of responses (JSON strings or {"response": ...})'
    )
    judge.add_argument("--server", help="judge on this referee server instead of in-process")
    judge.add_argument("--api-key", help="the server's API key")
    judge.set_defaults(func=_judge)
