"""Optional API-key auth: ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``.

The key is checked twice over: by :class:`~referee.services.middleware.RequestGuard` from the
headers alone, before a byte of the body is read (so an unauthenticated upload costs the server
nothing), and by the :func:`require_api_key` dependency of each router that needs it (which also
covers an app built without the guard). :func:`open_paths` lists the routes that need no key.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable, Mapping

from fastapi import APIRouter, FastAPI, Request
from starlette.routing import compile_path

from referee.client.errors import Unauthorized

__all__ = ["api_key_problem", "open_paths", "require_api_key"]


def api_key_problem(headers: Mapping[str, str], keys: list[str]) -> Unauthorized | None:
    """Why these request headers are refused, or None when they carry an accepted key (or the
    server accepts everyone: no keys set)."""
    if not keys:
        return None
    header = headers.get("authorization", "")
    given = header[7:].strip() if header.lower().startswith("bearer ") else None
    given = given or headers.get("x-api-key")
    if not given:
        return Unauthorized("this server needs an API key: send 'Authorization: Bearer KEY'")
    if not any(hmac.compare_digest(given.encode(), k.encode()) for k in keys):
        return Unauthorized("the API key is not one this server accepts")
    return None


async def require_api_key(request: Request) -> None:
    problem = api_key_problem(request.headers, request.app.state.settings.api_keys)
    if problem is not None:
        raise problem


def open_paths(app: FastAPI, routers: Iterable[APIRouter]) -> list[re.Pattern[str]]:
    """Path patterns served without a key: the given routers' routes and FastAPI's own pages
    (the OpenAPI document, /docs, /redoc)."""
    paths = [getattr(route, "path", None) for router in routers for route in router.routes]
    paths += [app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url]
    return [compile_path(p)[0] for p in paths if p]
