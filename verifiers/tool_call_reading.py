"""Reading the tool calls a response makes, from the shapes models and trainers produce.

An OpenAI assistant message (or a list of them) with ``tool_calls`` (``{"type": "function",
"function": {"name", "arguments"}}``, ``arguments`` a JSON string or an object), the legacy
``function_call``, Hermes/Qwen ``<tool_call>{json}</tool_call>`` blocks (ToolRL's too: several
calls one JSON object a line in one block), a JSON object or list of
``{"name", "arguments"}`` (xLAM's answer shape; ``parameters`` is read as ``arguments``) in the
text or a fenced block, or Python call syntax (``[get_weather(city="Paris"), get_time(tz="CET")]``:
BFCL's answers and the "pythonic" tool calls of Llama 3.2 and later, read with ``ast``, never run;
keyword arguments with literal values only), or the XML forms of Qwen3-Coder / Qwen3.5
(``<function=NAME><parameter=ARG>value</parameter></function>``) and GLM-4.5
(``NAME<arg_key>ARG</arg_key><arg_value>value</arg_value>``) inside ``<tool_call>`` blocks
(``tool_call_xml``), or between DeepSeek-V3's / V3.1's, Kimi-K2's or Mistral's own tokens
(``tool_call_tokens``). Every reader is bounded on hostile text.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from referee.verifiers.fences import fenced_blocks
from referee.verifiers.text_scan import after_thinking

__all__ = ["MAX_CALLS", "ToolCall", "parse_tool_calls", "read_call"]

MAX_CALLS = 64
_SCAN_BUDGET = 4_000_000
"""Characters the search for a JSON object in prose may read in all (each failed attempt reads
up to where it failed), so a response full of unclosed brackets costs linear time."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


def _arguments(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except (json.JSONDecodeError, RecursionError):
            return None
    return dict(raw) if isinstance(raw, Mapping) else None


def read_call(obj: Any) -> ToolCall | None:
    """One call from ``{"name", "arguments"}``, ``{"function": {...}}`` or ``function_call``."""
    if not isinstance(obj, Mapping):
        return None
    if isinstance(obj.get("function"), Mapping):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    raw = obj.get("arguments", obj.get("parameters"))
    args = _arguments(raw)
    return None if args is None else ToolCall(name, args)


def _calls_from_json(value: Any) -> list[ToolCall] | None:
    """Calls from a parsed JSON value, or None when it holds none."""
    if isinstance(value, Mapping):
        if isinstance(value.get("tool_calls"), list):
            found = [read_call(c) for c in value["tool_calls"]]
            return [c for c in found if c is not None] if any(found) else None
        if isinstance(value.get("function_call"), Mapping):
            one = read_call(value["function_call"])
            return None if one is None else [one]
        one = read_call(value)
        return None if one is None else [one]
    if isinstance(value, list) and value:
        out: list[ToolCall] = []
        for entry in value:
            inner = _calls_from_json(entry)
            if inner is None:
                return None
            out.extend(inner)
        return out
    return None


def _loads(text: str) -> Any:
    """The JSON object or list ``text`` spells (stripped), else None. Only text that opens
    like one is parsed: a failed ``json.loads`` costs more than the rest of a cheap check."""
    if text[:1] not in ("{", "["):
        return None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None


_SPACE = re.compile(r"\s*")


def _block_calls(body: str) -> list[ToolCall] | None:
    """The calls of one ``<tool_call>`` block: one JSON value (a call, a list of calls), or
    several calls one after another (ToolRL's data and prompts write parallel calls one JSON
    object a line in one block). Anything in the block that is not such a call: None."""
    one = _loads(body)
    if one is not None:
        return _calls_from_json(one)
    if body[:1] != "{":
        return None
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    at = 0
    while at < len(body) and len(calls) <= MAX_CALLS:
        try:
            value, end = decoder.raw_decode(body, at)
        except (json.JSONDecodeError, RecursionError):
            return None
        call = read_call(value)
        if call is None:
            return None
        calls.append(call)
        at = _SPACE.match(body, end).end()  # type: ignore[union-attr]
    return calls or None


def _embedded_json(text: str) -> list[ToolCall] | None:
    """The first JSON object or list in the text that holds calls."""
    decoder = json.JSONDecoder()
    tries, budget = 0, _SCAN_BUDGET
    for m in re.finditer(r"[\[{]", text):
        tries += 1
        if tries > 200 or budget <= 0:
            break
        try:
            value, end = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError as exc:
            budget -= max(1, exc.pos - m.start())  # how far the failed attempt read
            continue
        except RecursionError:
            continue
        budget -= end - m.start()
        calls = _calls_from_json(value)
        if calls is not None:
            return calls
    return None


_PYTHONIC_TAGS = re.compile(r"<\|python_(?:start|end|tag)\|>|<\|eom_id\|>|<\|eot_id\|>")
_PYTHONIC_START = re.compile(r"[\[(]?\s*[A-Za-z_][\w.]*\s*\(")
_MAX_PYTHONIC_CHARS = 20_000


def _literal(node: ast.AST) -> Any:
    """A keyword argument's value: a Python literal as the JSON value it spells (tuples as lists);
    raises ValueError for anything else (a name, a call, an operator)."""
    value = ast.literal_eval(node)
    return json.loads(json.dumps(value))  # tuples -> lists; a set or bytes raises TypeError


def _pythonic_calls(text: str) -> list[ToolCall] | None:
    """Calls written as Python: ``f(a=1)`` or ``[f(a=1), g(b="x")]``; None when it is not that."""
    source = _PYTHONIC_TAGS.sub("", text).strip()
    if len(source) > _MAX_PYTHONIC_CHARS or not _PYTHONIC_START.match(source):
        return None
    try:
        node = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    calls: list[ToolCall] = []
    for call in node.elts if isinstance(node, ast.List | ast.Tuple) else [node]:
        if not isinstance(call, ast.Call) or call.args:
            return None  # positional arguments have no names to compare
        name = ast.unparse(call.func)
        if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            return None
        arguments: dict[str, Any] = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                return None  # **kwargs
            try:
                arguments[keyword.arg] = _literal(keyword.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                return None
        calls.append(ToolCall(name, arguments))
    return calls or None


def _openai_shaped(value: Any) -> bool:
    if isinstance(value, list):
        return any(_openai_shaped(v) for v in value)
    if not isinstance(value, Mapping):
        return False
    return "tool_calls" in value or "function_call" in value or "function" in value


def _xml_block_calls(
    body: str, declarations: Mapping[str, Any] | None
) -> tuple[list[ToolCall] | None, str]:
    """A ``<tool_call>`` block in Qwen3-Coder's or GLM-4.5's XML form (``tool_call_xml``)."""
    from referee.verifiers.tool_call_xml import glm_calls, qwen_xml_calls

    if "<function=" in body:
        found, fmt = qwen_xml_calls(body, declarations), "qwen3_coder"
    else:
        found, fmt = glm_calls(body, declarations), "glm45"
    return (None if found is None else [ToolCall(n, a) for n, a in found]), fmt


def parse_tool_calls(
    response: str, declarations: Mapping[str, Any] | None = None
) -> tuple[list[ToolCall], str | None]:
    """The calls in a response and where they were found (``None``: none found);
    ``declarations`` (tool name -> ``tool_declarations.Declaration``) type the values of the
    XML formats."""
    text = after_thinking(response)
    whole = _loads(text)
    if whole is not None:
        calls = _calls_from_json(whole)
        if calls is not None:
            return calls[:MAX_CALLS], "openai" if _openai_shaped(whole) else "json"
    if "<tool_call>" in text:
        calls = []
        fmt = "hermes"
        for part in text.split("<tool_call>")[1:]:  # an unclosed last block counts
            body = part.split("</tool_call>", 1)[0].strip()
            found = _block_calls(body)
            if found is None and body[:1] not in ("{", "["):
                found, fmt = _xml_block_calls(body, declarations)
            calls.extend(found or [])
            if len(calls) > MAX_CALLS:
                break
        if calls:
            return calls[:MAX_CALLS], fmt
    if (
        "<｜tool▁calls▁begin｜>" in text
        or "<|tool_calls_section_begin|>" in text
        or "[ARGS" in text
        or "<|call|>" in text
        or "<minimax:tool_call>" in text
    ):
        from referee.verifiers.tool_call_tokens import special_token_calls

        special = special_token_calls(text, declarations)
        if special is not None:
            return [ToolCall(n, a) for n, a in special[0][:MAX_CALLS]], special[1]
    if "to=functions." in text and "<|message|>" not in text:  # gpt-oss, its tokens skipped
        from referee.verifiers.tool_call_tokens import stripped_harmony_calls

        harmony = stripped_harmony_calls(text, declarations)
        if harmony:
            return [ToolCall(n, a) for n, a in harmony[:MAX_CALLS]], "harmony"
    if "functions." in text and "<|tool_call_begin|>" not in text:  # Kimi-K2, tokens skipped
        from referee.verifiers.tool_call_tokens import stripped_kimi_calls

        kimi = stripped_kimi_calls(text)
        if kimi:
            return [ToolCall(n, a) for n, a in kimi[:MAX_CALLS]], "kimi_k2"
    if "<function=" in text:  # Llama 3.1's custom tools, no <tool_call> around them
        from referee.verifiers.tool_call_xml import llama_function_calls

        tagged = llama_function_calls(text, declarations)
        if tagged is not None:
            return [ToolCall(n, a) for n, a in tagged[:MAX_CALLS]], "llama3_function"
    if declarations and "{" in text:  # DeepSeek's or Mistral's, tokens skipped: NAME{json}
        from referee.verifiers.tool_call_tokens import stripped_glued_calls

        glued = stripped_glued_calls(text, declarations)
        if glued:
            return [ToolCall(n, a) for n, a in glued[:MAX_CALLS]], "glued"
    for _language, body in fenced_blocks(text):
        found = _calls_from_json(_loads(body.strip()))
        if found:
            return found[:MAX_CALLS], "json"
    found = _embedded_json(text)
    if found:
        return found[:MAX_CALLS], "json"
    for candidate in (text, *(body for _language, body in fenced_blocks(text))):
        found = _pythonic_calls(candidate)
        if found:
            return found[:MAX_CALLS], "pythonic"
    return [], None
