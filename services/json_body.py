"""Request bodies parsed with orjson, Python's parser where orjson refuses.

A batch's body is parsed on the event loop before anything else of the request is done; with
Python's ``json`` that was the largest part of the server's own time on a batch of sql items
(each carrying its database as 14 KB of ``setup`` SQL), ahead of validation. orjson reads the
same JSON twice as fast (a batch of sql items: 5 µs an item, not 10). What it refuses that
Python's parser reads (a lone surrogate escape, a UTF-16 body), what neither reads, and what it
reads otherwise (an integer past 64 bits, which orjson makes a float) go to Python's parser, so
every body gets the value, or the error, it got before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.routing import APIRoute

__all__ = ["FastJSONRoute", "parse"]


_BIG = 9.2e18  # orjson reads an integer past 64 bits as a float, as large as this or more


def parse(body: bytes) -> Any:
    """``json.loads(body)``'s value or error, by orjson where it can."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)
    return json.loads(body) if _has_big_float(value) else value


def _has_big_float(value: Any) -> bool:
    """Whether a float of :data:`_BIG` or more (either sign) is in ``value``: where orjson may
    have read an integer past 64 bits, which Python reads exactly (a float that large written as
    one, ``1e300``, is read again for nothing). A walk of the parsed value: about 0.6 µs an item
    of a batch, where a search of the body for long digit runs took 140."""
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
        elif kind is float and not -_BIG < node < _BIG:
            return True
    return False


class _FastJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse(await self.body())
        return self._json


class FastJSONRoute(APIRoute):
    """A route whose JSON body is read by :func:`parse`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def fast_json_handler(request: Request) -> Response:
            return await handler(_FastJSONRequest(request.scope, request.receive))

        return fast_json_handler
