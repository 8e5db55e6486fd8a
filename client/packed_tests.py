"""Test cases packed as base64 of zlib-compressed pickle, read without running any code.

LiveCodeBench ships its ``private_test_cases`` so (a pickled JSON text of the test list) and
open-instruct's ``encode_tests`` packs a code row's tests so (a pickled list). A pickle can
name any callable to run while it loads; here it is read by an unpickler that refuses every
global (``find_class``) and persistent id, so only plain values come out: text, numbers,
lists, tuples, dicts, sets. What a pickle can still do is make one value referenced many
times (a list of a million references to one large dict); the value is accepted only when a
walk of it, counting each reference, stays within a budget of nodes and characters.

    unpack_tests(b64_text)   # -> the decoded value (a JSON text is parsed), or None
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import zlib
from typing import Any

__all__ = ["MAX_UNPACKED_BYTES", "plain_within_budget", "unpack_tests"]

MAX_UNPACKED_BYTES = 256 * 1024 * 1024
"""The most a packed value may inflate to (TACO's largest rows hold some tens of megabytes)."""

_MAX_NODES = 10_000_000
_MAX_DEPTH = 64


class _PlainUnpickler(pickle.Unpickler):
    """An unpickler that loads plain values only: any global or persistent id is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"packed tests may not name {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("packed tests may not hold persistent ids")


def _inflate(data: bytes) -> bytes | None:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, MAX_UNPACKED_BYTES + 1)
    except zlib.error:
        return None
    if len(out) > MAX_UNPACKED_BYTES or inflater.unconsumed_tail:
        return None
    return out


def plain_within_budget(value: Any, max_nodes: int = _MAX_NODES) -> bool:
    """Whether walking ``value`` (each reference counted) stays within the budget of nodes,
    characters and depth (a value that holds itself goes past the depth), and it holds only
    plain values."""
    nodes, chars = 0, 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes or depth > _MAX_DEPTH:
            return False
        if isinstance(item, str | bytes):
            chars += len(item)
            if chars > MAX_UNPACKED_BYTES:
                return False
        elif isinstance(item, dict):
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend((v, depth + 1) for v in item)
        elif not (item is None or isinstance(item, bool | int | float)):
            return False
    return True


def unpack_tests(text: str) -> Any | None:
    """The value packed in ``text`` (base64 of zlib of a pickle), a JSON text in it parsed;
    None when ``text`` is no such packing, or unpacks to something other than plain values
    or past the budget."""
    try:
        data = base64.b64decode(text.encode("ascii"), validate=False)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None
    raw = _inflate(data)
    if raw is None:
        return None
    try:
        value = _PlainUnpickler(io.BytesIO(raw)).load()
    except Exception:  # any malformed pickle: not a packing
        return None
    if not plain_within_budget(value):
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return None
    return value
