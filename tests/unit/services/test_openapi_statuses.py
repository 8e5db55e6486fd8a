"""The OpenAPI document lists every status a route can answer.

The statuses a route answers are read from the code, not from a list kept by hand:

* a status the endpoint sets (``response.status_code = 200``, a ``status_code=`` argument) or
  an ``APIError`` it raises, in its own body or in the route modules' functions and the
  sandbox executor's methods it calls;
* 401 where the route needs an API key (the request guard checks the key on every path but the
  open ones);
* 413 and 422 where the route takes a body (the request guard refuses too large a body and
  malformed or too deep JSON before the route runs).
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute

from referee.client import errors
from referee.services.app import create_app
from referee.services.execution.slots import SandboxExecutor
from referee.services.middleware import RequestGuard

ERROR_STATUS = {
    name: cls.status
    for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, errors.APIError) and cls is not errors.APIError
}


ROUTES = "referee.services.routes."


def _ints(node: ast.AST) -> Iterator[int]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and type(sub.value) is int:
            yield sub.value


def statuses_in_code(func: Any) -> set[int]:
    """The statuses ``func`` (and what it calls of the route modules and the executor) sets or
    raises."""
    found: set[int] = set()
    seen: set[str] = set()
    todo = [func]
    while todo:
        fn = todo.pop()
        if fn.__qualname__ + fn.__module__ in seen:
            continue
        seen.add(fn.__qualname__ + fn.__module__)
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "status_code" for t in node.targets
            ):
                found.update(_ints(node.value))
            elif isinstance(node, ast.keyword) and node.arg == "status_code":
                found.update(_ints(node.value))
            elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = node.exc.func
                if isinstance(name, ast.Name) and name.id in ERROR_STATUS:
                    found.add(ERROR_STATUS[name.id])
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                callee = getattr(sys.modules[fn.__module__], node.func.id, None)
                if inspect.isfunction(callee) and callee.__module__.startswith(ROUTES):
                    todo.append(callee)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                method = getattr(SandboxExecutor, node.func.attr, None)
                if inspect.isfunction(method):  # the sandbox slots' refusals (429, 503)
                    todo.append(method)
    return found


def api_routes(app: FastAPI) -> list[APIRoute]:
    """The app's routes (FastAPI >= 0.165 keeps an included router's routes on the router)."""
    found: list[APIRoute] = []
    todo: list[Any] = list(app.routes)
    while todo:
        route = todo.pop(0)
        if isinstance(route, APIRoute):
            found.append(route)
        elif hasattr(route, "original_router"):
            todo.extend(route.original_router.routes)
    return found


def open_paths(app: FastAPI) -> list[re.Pattern[str]]:
    """The paths the request guard serves without a key."""
    for middleware in app.user_middleware:
        if middleware.cls is RequestGuard:
            return list(middleware.kwargs["open_paths"])
    raise AssertionError("the app has no request guard")


def required_statuses(route: APIRoute, open_: list[re.Pattern[str]]) -> set[int]:
    needed = statuses_in_code(route.endpoint)
    if not any(p.match(route.path) for p in open_):
        needed.add(401)
    if route.body_field is not None:
        needed |= {413, 422}
    return needed


def test_the_reader_sees_what_a_route_answers() -> None:
    """The code reading is itself checked on routes whose answers are known."""
    app = create_app()
    routes = {(r.path, m): r for r in api_routes(app) for m in r.methods}
    assert statuses_in_code(routes[("/v1/jobs", "POST")].endpoint) == {200, 202, 413}
    assert statuses_in_code(routes[("/readyz", "GET")].endpoint) == {200, 503}
    assert 413 in statuses_in_code(routes[("/v1/rewards", "POST")].endpoint)
    assert {503, 504} <= statuses_in_code(routes[("/run_code", "POST")].endpoint)
    open_ = open_paths(app)
    assert 401 not in required_statuses(routes[("/healthz", "GET")], open_)
    assert {401, 413, 422} <= required_statuses(routes[("/v1/judge", "POST")], open_)


def test_every_status_a_route_answers_is_documented() -> None:
    app = create_app()
    paths = app.openapi()["paths"]
    open_ = open_paths(app)
    missing: list[str] = []
    checked = 0
    for route in api_routes(app):
        if not route.include_in_schema:
            continue
        for method in sorted(route.methods):
            documented = {int(k) for k in paths[route.path_format][method.lower()]["responses"]}
            documented.add(route.status_code or 200)
            lacking = required_statuses(route, open_) - documented
            if lacking:
                missing.append(f"{method} {route.path}: {sorted(lacking)}")
            checked += 1
    assert checked >= 10
    assert not missing, "statuses answered but not in the OpenAPI document:\n" + "\n".join(missing)
