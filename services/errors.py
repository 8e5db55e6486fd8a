"""One place that turns every failure into an ``application/problem+json`` answer.

Faults the code raises on purpose are :class:`referee.client.errors.APIError` subclasses.
Validation failures (malformed JSON, wrong types, unknown grader) become 422 with the list of
what is wrong and where. Anything else is a bug of ours: 500, logged with its traceback, and the
body says nothing about the internals.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from referee.client.errors import (
    APIError,
    InternalServerError,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    error_for_problem,
)

__all__ = ["install_error_handlers", "problem_response"]

log = logging.getLogger("referee.errors")
PROBLEM_JSON = "application/problem+json"


def problem_response(error: APIError, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        error.to_problem(), status_code=error.status_code, media_type=PROBLEM_JSON, headers=headers
    )


def _clean(errors: list[Any]) -> list[dict[str, Any]]:
    cleaned = []
    for err in errors[:50]:
        loc = [str(p) for p in err.get("loc", ())]
        cleaned.append(
            {"loc": loc, "msg": str(err.get("msg", ""))[:300], "type": str(err.get("type", ""))}
        )
    return cleaned


def _summary(errors: list[dict[str, Any]]) -> str:
    if not errors:
        return "the request body is invalid"
    first = errors[0]
    where = ".".join(first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


async def _on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, APIError)
    retry_after = getattr(exc, "retry_after_s", None)
    headers = {"retry-after": f"{max(1, round(retry_after))}"} if retry_after else None
    return problem_response(exc, headers)


async def _on_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = _clean(list(exc.errors()))
    if any(e["type"] == "json_invalid" for e in errors):
        return problem_response(
            InvalidRequest("the body is not valid JSON: " + _summary(errors), errors=errors)
        )
    return problem_response(InvalidRequest(_summary(errors), errors=errors))


async def _on_http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        return problem_response(NotFound(f"no route {request.method} {request.url.path}"))
    if exc.status_code == 405:
        err = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}")
        return problem_response(err, {"allow": _allowed(request)})
    if exc.status_code == 400 and exc.__cause__ is not None:  # FastAPI could not read the body
        reason = "nested too deeply" if isinstance(exc.__cause__, RecursionError) else "not JSON"
        return problem_response(
            InvalidRequest(f"the body could not be read as JSON ({reason}: UTF-8 JSON expected)")
        )
    if exc.status_code == 413:
        return problem_response(PayloadTooLarge(str(exc.detail)))
    return problem_response(error_for_problem(exc.status_code, {"detail": str(exc.detail)}))


def _allowed(request: Request) -> str:
    """Every method some route serves at this path (routes of one path are separate)."""
    path = request.url.path
    methods: set[str] = set()
    for route in request.app.router.routes:
        for candidate in _leaves(route):
            regex = getattr(candidate, "path_regex", None)
            if regex is not None and regex.match(path):
                methods |= set(getattr(candidate, "methods", None) or ())
    return ", ".join(sorted(methods))


def _leaves(route: Any) -> list[Any]:
    inner = getattr(route, "original_router", None)  # an included router (FastAPI >= 0.16x)
    if inner is None:
        return [route]
    return [leaf for child in inner.routes for leaf in _leaves(child)]


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(InternalServerError("an internal error occurred; it has been logged"))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(APIError, _on_api_error)
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(Exception, _on_unexpected)
