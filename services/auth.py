"""Optional API-key auth: ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``."""

from __future__ import annotations

import hmac

from fastapi import Request

from referee.client.errors import Unauthorized

__all__ = ["require_api_key"]


async def require_api_key(request: Request) -> None:
    keys: list[str] = request.app.state.settings.api_keys
    if not keys:
        return
    header = request.headers.get("authorization", "")
    given = header[7:].strip() if header.lower().startswith("bearer ") else None
    given = given or request.headers.get("x-api-key")
    if not given:
        raise Unauthorized("this server needs an API key: send 'Authorization: Bearer KEY'")
    if not any(hmac.compare_digest(given.encode(), k.encode()) for k in keys):
        raise Unauthorized("the API key is not one this server accepts")
