"""SGLang's tool-call parsers, from the pinned sglang wheel, loaded by path.

The wheel (``pip download --no-deps sglang==0.5.23``, CPython 3.11 on Linux) is downloaded once
into the tests' cache (tests/pinned_download.py) and checked against its sha256. Loaded from it:
``sglang/srt/function_call``'s ``core_types``, ``utils``, ``base_format_detector`` and the
detectors asked for, with what they import: ``srt/entrypoints/openai/protocol.py`` (the
``Tool`` and ``Function`` models the parsers read), ``srt/environ.py`` and
``srt/parser/harmony_parser.py`` (gpt-oss's messages), under their own
names in empty parent packages. One module is put in place instead of SGLang's: ``sglang.utils``
(numpy, requests, IPython...), of which ``protocol.py`` uses one function that the parsers never
reach. msgspec, orjson and partial-json-parser come from the dev extras.
"""

from __future__ import annotations

import sys
import types
import zipfile
from typing import Any

from pinned_download import pinned_file

VERSION = "0.5.23"
WHEEL = f"sglang-{VERSION}-cp311-cp311-manylinux_2_34_x86_64.whl"
WHEEL_SHA256 = "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937"
_BASE = (
    "sglang.srt.environ",
    "sglang.srt.parser.harmony_parser",
    "sglang.srt.entrypoints.openai.protocol",
    "sglang.srt.function_call.core_types",
    "sglang.srt.function_call.utils",
    "sglang.srt.function_call.base_format_detector",
)


def _package(name: str) -> None:
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__path__ = []
        sys.modules[name] = module


def _load(wheel: zipfile.ZipFile, dotted: str) -> types.ModuleType:
    if dotted in sys.modules:
        return sys.modules[dotted]
    path = dotted.replace(".", "/") + ".py"
    module = types.ModuleType(dotted)
    module.__file__ = path
    sys.modules[dotted] = module
    exec(compile(wheel.read(path).decode(), path, "exec"), module.__dict__)
    return module


def module(name: str) -> Any:
    """``sglang.srt.function_call.<name>`` (e.g. ``qwen3_coder_detector``), with what it needs."""
    wheel_path = pinned_file("sglang", VERSION, WHEEL, WHEEL_SHA256)
    for dotted in ("sglang", "sglang.srt", "sglang.srt.entrypoints", "sglang.srt.parser",
                   "sglang.srt.entrypoints.openai", "sglang.srt.function_call"):  # fmt: skip
        _package(dotted)
    if "sglang.utils" not in sys.modules:
        stub = types.ModuleType("sglang.utils")
        stub.convert_json_schema_to_str = str  # type: ignore[attr-defined]
        sys.modules["sglang.utils"] = stub
    with zipfile.ZipFile(wheel_path) as wheel:
        for dotted in _BASE:
            _load(wheel, dotted)
        return _load(wheel, f"sglang.srt.function_call.{name}")


def tools(definitions: list[dict[str, Any]]) -> list[Any]:
    """OpenAI tool definitions as SGLang's ``Tool`` objects."""
    protocol = sys.modules["sglang.srt.entrypoints.openai.protocol"]
    return [protocol.Tool.model_validate(d) for d in definitions]
