"""OpenAI's graders API, as the ``openai`` SDK calls it: ``POST /v1/fine_tuning/alpha/graders/run``
and ``POST /v1/fine_tuning/alpha/graders/validate`` (``OpenAI(base_url="http://HOST:8000/v1")``
then ``client.fine_tuning.alpha.graders.run(grader=..., model_sample=..., item=...)``).

``run``: the grader object's ``{{item.*}}`` templates are filled from ``item`` (string_check's and
text_similarity's ``reference``, inside ``multi`` too; the python grader and the model graders
take ``item`` as their row), the sample is the response, and the grader is scored on the one
scoring path (the python grader in the sandbox, the model graders on the judge backend). The
answer is OpenAI's ``GraderRunResponse``: ``reward`` (0.0 when the grader failed),
``metadata.errors`` saying which failure (a python grader that raised, a judge that failed or
gave no verdict, a formula that could not be computed), ``sub_rewards`` and ``metadata.scores`` a
multi grader's parts, and referee's own details under ``metadata.details``. ``validate``: the
grader read as ``run`` reads it; one referee cannot read is a 422 naming the field.
"""

from __future__ import annotations

import re
import time
from typing import Any

from fastapi import Request
from pydantic import ValidationError

from referee.client.compat_models import (
    OpenAIGraderRunErrors,
    OpenAIGraderRunMetadata,
    OpenAIGraderRunRequest,
    OpenAIGraderRunResponse,
    OpenAIGraderValidateRequest,
    OpenAIGraderValidateResponse,
)
from referee.client.errors import InvalidRequest
from referee.client.models import RewardItem, RewardResult
from referee.services.openapi_doc import api_key_router
from referee.services.routes.rewards import score_for_request
from referee.services.scoring.openai import render_template

__all__ = ["router"]

router = api_key_router(
    "/v1/fine_tuning/alpha/graders",
    "openai graders",
    {422: "A grader referee cannot read, an item that is not an object, a template the item lacks"},
)

_TEXT = frozenset({"string_check", "text_similarity"})
_ROW = frozenset({"python", "score_model", "label_model"})
_ITEM_TEMPLATE = re.compile(r"\{\{\s*item\.[A-Za-z0-9_.\[\]-]+\s*\}\}")


def _filled(grader: Any, item: dict[str, Any] | None, sample: str, where: str) -> Any:
    """``grader`` with the item's templates filled and the item given to the graders that read
    the row; a template the item has no value for is a 422 naming it (``item`` None: templates
    stand for any text, to validate a grader)."""
    if not isinstance(grader, dict):
        return grader
    out = dict(grader)
    kind = out.get("type")
    if kind in _TEXT and isinstance(out.get("reference"), str):
        if item is None:
            out["reference"] = _ITEM_TEMPLATE.sub("item", out["reference"])
            return out
        out["reference"] = render_template(out["reference"], item, sample)
        left = _ITEM_TEMPLATE.search(out["reference"])
        if left is not None:
            raise InvalidRequest(f"{where}.reference: the item has no value for {left.group(0)}")
    elif kind in _ROW and "item" not in out:
        out["item"] = item or {}
    elif kind == "multi":
        graders = out.get("graders")
        if isinstance(graders, dict) and isinstance(graders.get("type"), str):
            graders = {str(graders.get("name") or "grader"): graders}  # the SDK's one-grader type
        if isinstance(graders, dict):
            out["graders"] = {
                name: _filled(inner, item, sample, f"{where}.graders.{name}")
                for name, inner in graders.items()
            }
    return out


def _item(grader: dict[str, Any], sample: str, row: Any, validating: bool = False) -> RewardItem:
    if row is None and not validating:
        row = {}
    if row is not None and not isinstance(row, dict):
        raise InvalidRequest(f"item: a JSON object (the dataset row), not {type(row).__name__}")
    grader = _filled(grader, row, sample, "grader")
    try:
        return RewardItem.model_validate({"id": "0", "response": sample, "grader": grader})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:] if p not in ("0",))
        raise InvalidRequest(f"{where}: {first['msg']}") from exc


def _errors(result: RewardResult, kind: str) -> OpenAIGraderRunErrors:
    """Which of OpenAI's failure kinds the result is, from referee's outcome (``kind``: the
    grader object's type)."""
    details = result.details
    if result.valid and result.score is not None:
        return OpenAIGraderRunErrors()
    parts = [p for p in details.get("parts", []) if isinstance(p, dict)]
    failed = [p for p in parts if p.get("score") is None]
    if kind == "multi" and parts and not failed:  # every part scored: the formula failed
        return OpenAIGraderRunErrors(formula_parse_error=True)
    leaf = failed[0] if failed else details
    leaf_kind = str(leaf.get("type") or kind)
    outcome = str(leaf.get("outcome", ""))
    reason = str(leaf.get("reason") or details.get("reason") or outcome)[:2000]
    if leaf_kind == "python":
        if leaf.get("error_in") == "grade":  # it raised, or returned no number in [0, 1]
            return OpenAIGraderRunErrors(
                python_grader_runtime_error=True, python_grader_runtime_error_details=reason
            )
        return OpenAIGraderRunErrors(
            python_grader_server_error=True, python_grader_server_error_type=reason
        )
    if outcome == "parse_error":
        return OpenAIGraderRunErrors(model_grader_parse_error=True)
    if leaf_kind in ("rubric", "genrm", "score_model", "label_model"):
        return OpenAIGraderRunErrors(
            model_grader_server_error=True, model_grader_server_error_details=reason
        )
    return OpenAIGraderRunErrors(other_error=True)


@router.post(
    "/run",
    response_model=OpenAIGraderRunResponse,
    summary="OpenAI's grader run: one grader object on one sample",
)
async def run(body: OpenAIGraderRunRequest, request: Request) -> OpenAIGraderRunResponse:
    start = time.perf_counter()
    item = _item(body.grader, body.model_sample, body.item)
    [result] = (await score_for_request(request, [item], 1.0, "grader")).rewards
    parts = {
        str(p["name"]): p.get("score")
        for p in result.details.get("parts", [])
        if isinstance(p, dict) and p.get("name") is not None
    }
    kind = str(body.grader.get("type", ""))
    sub_rewards = parts if kind == "multi" else {}
    ok = result.valid and result.score is not None
    return OpenAIGraderRunResponse(
        reward=float(result.score) if ok and result.score is not None else 0.0,
        metadata=OpenAIGraderRunMetadata(
            errors=_errors(result, kind),
            execution_time=round(time.perf_counter() - start, 6),
            name=str(body.grader.get("name") or ""),
            scores=sub_rewards,
            type=kind,
            details=result.details,
        ),
        sub_rewards=sub_rewards,
    )


@router.post(
    "/validate",
    response_model=OpenAIGraderValidateResponse,
    summary="OpenAI's grader validate: can referee read this grader object",
)
async def validate(body: OpenAIGraderValidateRequest) -> OpenAIGraderValidateResponse:
    _item(body.grader, "", None, validating=True)
    return OpenAIGraderValidateResponse(grader=body.grader)
