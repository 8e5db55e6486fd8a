"""Tool calls written as XML: Qwen3-Coder's (and Qwen3.5's) and GLM-4.5's formats inside
``<tool_call>`` blocks, and MiniMax-M2's ``<minimax:tool_call>`` blocks, read as SGLang's
``qwen3_coder``, ``glm45`` and ``minimax-m2`` parsers read them.

Qwen3-Coder::

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

GLM-4.5 / 4.6 (4.7 writes no newline after the name)::

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>
    </tool_call>

MiniMax-M2::

    <minimax:tool_call>
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    </invoke>
    </minimax:tool_call>

The values are text; their types come from the tool's declaration (``tools``), as the serving
engines convert them: for Qwen3-Coder a declared ``string`` keeps the text, an ``integer`` is
``int()``, a ``number`` a float (an int when the text has no ``.`` or ``e``), a ``boolean``
``true``/``false``, an ``object`` or ``array`` JSON (then a Python literal), ``null`` None; for
GLM the text is read as JSON first (then unescaped, then as a Python literal), a declared
``string`` kept as text; for MiniMax-M2 the first of the declared types the text reads as
(integer, number, boolean, object, array, in that order; string: the text). An argument the
declaration does not type stays text for Qwen3-Coder and MiniMax-M2 and is read as JSON for GLM,
as the engines do; with no declaration of the tool at all (no ``tools``), a value that reads
as a JSON number, boolean, null, array or object is that value (referee's reading: the engines
keep it as text), else the text. Every scan is linear: the
markers are found with ``str.find`` from where the last one ended.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from referee.verifiers.tool_declarations import Declaration

__all__ = [
    "MarkerFinder",
    "closed_blocks",
    "glm_calls",
    "minimax_calls",
    "qwen_xml_calls",
    "schema_type",
]

_LITERAL_CHARS = 100_000
"""Longest value read as a Python literal (``ast.literal_eval`` of more costs too much)."""
_STRING_TYPES = frozenset({"string", "str", "text", "varchar", "char", "enum"})


def schema_type(schema: Any) -> str | None:
    """The type a JSON Schema gives a value, as SGLang's ``infer_type_from_json_schema`` reads
    it: ``type`` (a list: its first that is not null), ``anyOf``/``oneOf``, ``enum``'s values,
    ``allOf``, ``properties`` (object), ``items`` (array)."""
    if not isinstance(schema, Mapping):
        return None
    if "type" in schema:
        kind = schema["type"]
        if isinstance(kind, str):
            return kind
        if isinstance(kind, list) and kind:
            named = [t for t in kind if t != "null"]
            return str(named[0]) if named else "string"
    branches = schema.get("anyOf") or schema.get("oneOf")
    if ("anyOf" in schema or "oneOf" in schema) and isinstance(branches, list):
        types = [t for t in (schema_type(b) for b in branches) if t]
        if types:
            if len(set(types)) == 1:
                return types[0]
            if len(set(types)) == 2 and "null" in types:
                return next(t for t in types if t != "null")
            return "string" if "string" in types else types[0]
    if isinstance(schema.get("enum"), list):
        kinds = {_json_kind(v) for v in schema["enum"]}
        return kinds.pop() if len(kinds) == 1 else "string"
    if isinstance(schema.get("allOf"), list):
        for branch in schema["allOf"]:
            found = schema_type(branch)
            if found and found != "string":
                return found
        return "string"
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


def _literal(text: str) -> Any:
    """``ast.literal_eval`` of ``text``; raises ValueError when it is not a literal."""
    if len(text) > _LITERAL_CHARS:
        raise ValueError("too long to read as a literal")
    try:
        return ast.literal_eval(text)
    except (SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(str(exc)) from exc


def _json_value(text: str) -> tuple[Any, bool]:
    try:
        return json.loads(text), True
    except (ValueError, RecursionError):
        return None, False


def _undeclared(text: str) -> Any:
    """A value of a tool with no declaration: a JSON value when it reads as one, else text."""
    value, ok = _json_value(text.strip())
    return value if ok and not isinstance(value, str) else text


def _properties(name: str, decls: Mapping[str, Declaration] | None) -> Mapping[str, Any] | None:
    decl = decls.get(name) if decls else None
    return None if decl is None else (decl.properties or {})


# --- Qwen3-Coder -------------------------------------------------------------------------


def _qwen_value(text: str, schema: Any, declared: bool) -> Any:
    """SGLang's ``Qwen3CoderDetector._convert_param_value``."""
    if text.lower() == "null":
        return None
    if not declared:
        return text
    kind = str(schema_type(schema) or "string").strip().lower()
    if kind in _STRING_TYPES:
        return text
    if kind.startswith(("int", "uint", "long", "short", "unsigned")):
        try:
            return int(text)
        except ValueError:
            return text
    if kind.startswith(("num", "float")):
        try:
            number = float(text)
        except ValueError:
            return text
        whole = "." not in text and "e" not in text.lower()
        return int(number) if whole and number.is_integer() else number
    if kind in ("boolean", "bool", "binary"):
        return text.lower() == "true"
    if kind in ("object", "array", "arr") or kind.startswith(("dict", "list")):
        value, ok = _json_value(text)
        if ok:
            return value
    try:
        return _literal(text)
    except ValueError:
        return text


class MarkerFinder:
    """The next place of one marker at or after a position, found again only when passed (each
    marker's search then covers the text once in all)."""

    def __init__(self, text: str, marker: str) -> None:
        self.text, self.marker, self.at = text, marker, -2

    def next(self, start: int) -> int:
        if self.at != -1 and self.at < start:
            self.at = self.text.find(self.marker, start)
        return self.at


def _qwen_parameters(params: str, props: Mapping[str, Any] | None) -> dict[str, Any]:
    args: dict[str, Any] = {}
    opens, closes = MarkerFinder(params, "<parameter="), MarkerFinder(params, "</parameter>")
    at = 0
    while True:
        start = opens.next(at)
        if start < 0:
            return args
        begin = start + len("<parameter=")
        close, reopen = closes.next(begin), opens.next(begin)
        ends = [e for e in (close, reopen) if e >= 0]
        end = min(ends) if ends else len(params)
        at = end + len("</parameter>") if end == close else end
        piece = params[begin:end]
        if ">" not in piece:
            continue
        name, _, value = piece.partition(">")
        value = value[1:] if value.startswith("\n") else value
        value = value[:-1] if value.endswith("\n") else value
        if props is None:
            args[name] = None if value.lower() == "null" else _undeclared(value)
        else:
            args[name] = _qwen_value(value, props.get(name), name in props)


Call = tuple[str, dict[str, Any]]
"""A call read: its name and arguments (``tool_call_reading`` makes its ``ToolCall``)."""


def qwen_xml_calls(body: str, decls: Mapping[str, Declaration] | None) -> list[Call] | None:
    """The calls of one ``<tool_call>`` block in Qwen3-Coder's format, or None when the block
    holds no ``<function=NAME>``."""
    calls = [
        (name, _qwen_parameters(params, _properties(name, decls)))
        for name, params in _tagged(body, "<function=", "</function>", ">")[:64]
        if name
    ]
    return calls or None


def llama_function_calls(
    text: str, decls: Mapping[str, Declaration] | None = None
) -> list[Call] | None:
    """Llama 3.1's custom-tool calls, ``<function=NAME>{JSON arguments}</function>`` in the text
    (Meta's prompt format for tools given in the system prompt), one after another; a body in
    Qwen3-Coder's ``<parameter=...>`` form is read as that. None when a tag holds neither (a
    body that is not a JSON object is no call)."""
    calls: list[Call] = []
    for name, body in _tagged(text, "<function=", "</function>", ">")[:64]:
        if not name or not _NAME.fullmatch(name):
            return None
        inner = body.strip()
        if inner.startswith("<parameter="):
            calls.append((name, _qwen_parameters(body, _properties(name, decls))))
            continue
        try:
            args = json.loads(inner) if inner else {}
        except (json.JSONDecodeError, RecursionError):
            return None
        if not isinstance(args, dict):
            return None
        calls.append((name, args))
    return calls or None


_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,255}")


# --- GLM-4.5 -------------------------------------------------------------------------------


def _glm_parse(text: str, kind: str | None) -> tuple[Any, bool]:
    """SGLang's ``glm4_moe_detector.parse_arguments``."""
    value, ok = _json_value(text)
    if not ok:
        wrapped, ok = _json_value('{"tmp": "' + text + '"}')
        if ok and isinstance(wrapped, dict):
            value, ok = _json_value(wrapped["tmp"])
    if ok:
        if kind == "number" and isinstance(value, str):
            try:
                value = float(value) if "." in value or "e" in value.lower() else int(value)
            except ValueError:
                pass
        return value, True
    if kind == "string":
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            return text[1:-1], True
        return text, True
    try:
        return _literal(text), True
    except ValueError:
        return text, True  # SGLang's last step: the text as a JSON string, always readable


def _glm_value(text: str, props: Mapping[str, Any] | None, key: str) -> Any:
    if props is None:
        return None if text.strip() == "null" else _undeclared(text)
    kind = schema_type(props[key]) if key in props else None
    value, ok = _glm_parse(text, kind)
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
        return str(value)
    return value if ok else text


def glm_calls(body: str, decls: Mapping[str, Declaration] | None) -> list[Call] | None:
    """The call of one ``<tool_call>`` block in GLM-4.5's format (the name, then
    ``<arg_key>``/``<arg_value>`` pairs), or None when the block is not that."""
    first = body.find("<arg_key>")
    head = body if first < 0 else body[:first]
    name = head.split("\n", 1)[0].split("\\n", 1)[0].strip()
    if not name or any(c in name for c in "{}[]<>\"'=(): ") or (first < 0 and "\n" in body):
        return None
    props = _properties(name, decls)
    args: dict[str, Any] = {}
    at = first
    while at >= 0:
        key_end = body.find("</arg_key>", at)
        if key_end < 0:
            break
        key = body[at + len("<arg_key>") : key_end].strip()
        value_start = body.find("<arg_value>", key_end)
        if value_start < 0:
            break
        between = body[key_end + len("</arg_key>") : value_start]
        value_end = body.find("</arg_value>", value_start)
        if value_end < 0:
            break
        if not between.replace("\\n", "").strip():
            text = body[value_start + len("<arg_value>") : value_end]
            args[key] = _glm_value(text, props, key)
        at = body.find("<arg_key>", value_end)
    return [(name, args)]


# --- MiniMax-M2 ----------------------------------------------------------------------------

_MINIMAX_ORDER = (
    "integer", "int", "number", "float", "boolean", "bool", "object", "array", "string", "str",
    "text",
)  # fmt: skip
"""The order SGLang's MiniMax-M2 parser tries a parameter's types in."""


def _minimax_types(schema: Any) -> set[str]:
    """SGLang's ``MinimaxM2Detector._extract_types_from_schema``: every type the schema allows
    (``type`` and its lists, ``enum``'s values, ``anyOf``/``oneOf``/``allOf``); none: string."""
    if not isinstance(schema, Mapping):
        return {"string"}
    types: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        types.add(kind)
    elif isinstance(kind, list):
        types.update(t for t in kind if isinstance(t, str))
    if isinstance(schema.get("enum"), list):
        types.update(_json_kind(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for branch in schema[key]:
                types.update(_minimax_types(branch))
    return types or {"string"}


def _minimax_value(text: str, types: set[str]) -> Any:
    """SGLang's ``MinimaxM2Detector._convert_param_value_with_types``: the first of the
    schema's types, in :data:`_MINIMAX_ORDER`, that the text reads as (a string type: the text),
    else JSON, else the text."""
    lowered = text.lower()
    names = {t.lower() for t in types}
    if lowered in ("null", "none", "nil") or "null" in names:
        return None
    for kind in _MINIMAX_ORDER:
        if kind not in names:
            continue
        if kind in ("string", "str", "text"):
            return text
        try:
            if kind in ("integer", "int"):
                return int(text)
            if kind in ("number", "float"):
                number = float(text)
                return int(number) if number == int(number) else number
            if kind in ("boolean", "bool"):
                flag = lowered.strip()
                if flag in ("true", "1", "yes", "on"):
                    return True
                if flag in ("false", "0", "no", "off"):
                    return False
                continue
            return json.loads(text)  # object, array
        except (ValueError, OverflowError, RecursionError):
            continue
    value, ok = _json_value(text)
    return value if ok else text


def minimax_calls(text: str, decls: Mapping[str, Declaration] | None) -> list[Call]:
    """The calls of MiniMax-M2's closed ``<minimax:tool_call>`` blocks (``<invoke name="F">``
    with ``<parameter name="P">value</parameter>``), as SGLang's ``minimax-m2`` parser reads
    them."""
    calls: list[Call] = []
    for block in closed_blocks(text, "<minimax:tool_call>", "</minimax:tool_call>"):
        for name, body in _tagged(block, '<invoke name="', "</invoke>", '">')[:64]:
            props = _properties(name.strip(), decls)
            args: dict[str, Any] = {}
            for key, value in _tagged(body, '<parameter name="', "</parameter>", '">'):
                value = value.lstrip("\n").rstrip("\n")
                if props is None:
                    undeclared = value.lower() in ("null", "none", "nil")
                    args[key.strip()] = None if undeclared else _undeclared(value)
                else:
                    args[key.strip()] = _minimax_value(
                        value, _minimax_types(props.get(key.strip()))
                    )
            calls.append((name.strip(), args))
    return calls[:64]


def _tagged(text: str, opener: str, closer: str, name_end: str) -> list[tuple[str, str]]:
    """(name, body) of each ``opener NAME name_end body closer``, an unclosed last one running
    to the end, as ``<x name="(.*?)</x>|<x name="(.*)$`` finds them (one without ``name_end``
    is left out)."""
    out: list[tuple[str, str]] = []
    closes = MarkerFinder(text, closer)
    at = 0
    while len(out) < 256:
        start = text.find(opener, at)
        if start < 0:
            break
        begin = start + len(opener)
        end = closes.next(begin)
        stop = end if end >= 0 else len(text)
        inner = text[begin:stop]
        at = stop + len(closer) if end >= 0 else len(text)
        if name_end in inner:
            name, _, body = inner.partition(name_end)
            out.append((name, body))
    return out


def closed_blocks(text: str, begin: str, end: str) -> list[str]:
    """The texts between each ``begin`` and the first ``end`` after it (closed ones only, at
    most 64)."""
    out: list[str] = []
    at = 0
    while len(out) < 64:
        start = text.find(begin, at)
        if start < 0:
            break
        stop = text.find(end, start + len(begin))
        if stop < 0:
            break
        out.append(text[start + len(begin) : stop])
        at = stop + len(end)
    return out
