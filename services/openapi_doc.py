"""The OpenAPI document, made to say what the server does.

FastAPI documents the routes' own answers; this adds what every route can answer besides, as
the server answers it:

* every error status is ``application/problem+json`` with the :class:`Problem` schema (FastAPI
  would write ``application/json`` and its own 422 schema, which no referee answer has);
* 401 on the routes that need an API key (the request guard refuses before the route runs),
  413 on routes that take a body (``REFEREE_MAX_BODY_BYTES``), 422 on routes that take a body or
  parameters (validation, JSON nesting and ``NaN``), 500 everywhere (a fault of ours: logged,
  the body says nothing of the internals).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi

from referee.client.models import Problem
from referee.services.json_body import FastJSONRoute

__all__ = ["API_KEY_PROBLEM", "api_key_router", "install_openapi", "problem_responses"]

PROBLEM_JSON = "application/problem+json"
API_KEY_PROBLEM = "Missing or unknown API key"
_COMMON = {
    "401": "Missing or unknown API key (checked before the body is read)",
    "413": "The body is larger than REFEREE_MAX_BODY_BYTES (counted as it arrives)",
    "422": "Invalid request: what is wrong and where (fields, JSON nesting, NaN or Infinity)",
    "500": "A fault of the server: logged; the body says nothing of its internals",
}
_REF = re.compile(r"^#/components/schemas/(.+)$")


def problem_responses(descriptions: dict[int, str]) -> dict[int | str, dict[str, Any]]:
    """A router's or a route's ``responses=`` table: each status with its description, its body
    a :class:`Problem`."""
    return {code: {"model": Problem, "description": text} for code, text in descriptions.items()}


def api_key_router(prefix: str, tag: str, problems: dict[int, str]) -> APIRouter:
    """A router of routes behind the API key: its ``responses=`` table is 401
    (:data:`API_KEY_PROBLEM`) and then ``problems``."""
    responses = problem_responses({401: API_KEY_PROBLEM, **problems})
    return APIRouter(prefix=prefix, tags=[tag], responses=responses, route_class=FastJSONRoute)


def _problem_content(response: dict[str, Any]) -> None:
    content = response.get("content") or {}
    given = content.get(PROBLEM_JSON) or content.get("application/json") or {}
    schema = given.get("schema") or {}
    ref = _REF.match(str(schema.get("$ref", "")))
    if not ref or ref.group(1) in ("HTTPValidationError", "ValidationError"):
        schema = {"$ref": "#/components/schemas/Problem"}
    response["content"] = {PROBLEM_JSON: {"schema": schema}}


def install_openapi(app: FastAPI, needs_key: Callable[[str], bool]) -> None:
    """Replace ``app.openapi`` with the document described above; ``needs_key(path)`` tells
    the routes behind the API key."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        schemas.setdefault(
            "Problem", Problem.model_json_schema(ref_template="#/components/{model}")
        )
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        for path, operations in doc.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                takes_body = "requestBody" in operation
                common = {"500"}
                if needs_key(path):
                    common.add("401")
                if takes_body:
                    common |= {"413", "422"}
                if operation.get("parameters"):
                    common.add("422")
                for code in sorted(common):
                    responses.setdefault(code, {"description": _COMMON[code]})
                for code, response in responses.items():
                    if code.isdigit() and int(code) >= 400:
                        _problem_content(response)
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
