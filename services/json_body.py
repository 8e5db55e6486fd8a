"""Request bodies parsed with orjson, Python's parser where orjson refuses.

A batch's body is parsed on the event loop before anything else of the request is done; with
Python's ``json`` that was the largest part of the server's own time on a batch of sql items
(each carrying its database as 14 KB of ``setup`` SQL), ahead of validation. orjson reads the
same JSON twice as fast (a batch of sql items: 5 µs an item, not 10). What it refuses that
Python's parser reads (a lone surrogate escape, a UTF-16 body), what neither reads, and what it
reads otherwise (an integer past 64 bits, which orjson makes a float) go to Python's parser, so
every body gets the value, or the error, it got before.

The request guard (``services/middleware.py``) parses a JSON body once, to check its depth
(:func:`parse_for_guard`), and hands the value on in the request's scope (:data:`PARSED`); the route
takes it from there instead of parsing the body again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.routing import APIRoute

__all__ = ["PARSED", "FastJSONRoute", "parse", "parse_for_guard"]


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


PARSED = "referee.parsed_json"
"""The scope key under which the request guard leaves ``(body, value)``: the body it parsed
and the value :func:`parse` gives it."""


def parse_for_guard(body: bytes, depth_limit: int) -> tuple[bool, bool, Any]:
    """orjson's reading of ``body``, for the request guard: ``(read, too_deep, value)``.

    ``read`` is False where orjson refuses the body or reads a float of :data:`_BIG` or more
    (which may be an integer Python reads exactly): the body is then left to the guard's scan
    and to Python's parser. Otherwise ``too_deep`` says whether its arrays and objects nest more
    than ``depth_limit`` deep (as the brackets of the text nest), and ``value`` is what
    :func:`parse` gives. orjson refuses ``NaN`` and ``Infinity``, which Python's parser takes:
    a body it reads has none. One walk, a level of the value at a time, as
    :func:`_has_big_float` walks it."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False, False, None
    depth = 0
    level = [value]
    while level:
        below: list[Any] = []
        nested = False
        for node in level:
            kind = type(node)
            if kind is dict:
                below.extend(node.values())
                nested = True
            elif kind is list:
                below.extend(node)
                nested = True
            elif kind is float and not -_BIG < node < _BIG:
                return False, False, None
        if nested:
            depth += 1
            if depth > depth_limit:
                return True, True, None
        level = below
    return True, False, value


class _FastJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            parsed = self.scope.pop(PARSED, None)  # the guard's reading, taken once
            if parsed is not None and (parsed[0] is body or parsed[0] == body):
                self._json = parsed[1]
            else:
                self._json = parse(body)
        return self._json


class FastJSONRoute(APIRoute):
    """A route whose JSON body is read by :func:`parse`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def fast_json_handler(request: Request) -> Response:
            return await handler(_FastJSONRequest(request.scope, request.receive))

        return fast_json_handler
