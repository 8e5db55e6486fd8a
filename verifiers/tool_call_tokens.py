"""Tool calls written between a model's own special tokens, read as SGLang's parsers for those
models read them: DeepSeek-V3 / R1 (``deepseekv3``), DeepSeek-V3.1 (``deepseekv31``), Kimi-K2
(``kimi_k2``), gpt-oss's harmony messages (``gpt-oss``) and Mistral's compact form (``mistral``,
Mistral Small 3.2, Magistral, Devstral).

DeepSeek-V3::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
    ```json
    {"city": "Paris"}
    ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>

DeepSeek-V3.1, inside the same section::

    <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>

Kimi-K2::

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
    <|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>

(a bare counter as the id, ``3``, names the declared tool whose parameters best fit the
arguments, as SGLang infers it). Mistral: ``[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}``,
one after another (its older ``[TOOL_CALLS] [{...}]`` is JSON, read as such). gpt-oss::

    <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>commentary
    to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|> The arguments are
JSON; a call whose arguments do not read is left out. Markers are found with ``str.find``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from typing import Any

from referee.verifiers.tool_call_xml import MarkerFinder, closed_blocks, minimax_calls
from referee.verifiers.tool_declarations import Declaration

__all__ = ["special_token_calls"]

Call = tuple[str, dict[str, Any]]

_DS_SECTION = "<｜tool▁calls▁begin｜>"
_DS_BEGIN, _DS_END, _DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
_DS_JSON, _DS_FENCE_END = "\n```json\n", "\n```"
_KIMI_SECTION = "<|tool_calls_section_begin|>"
_KIMI_BEGIN, _KIMI_END = "<|tool_call_begin|>", "<|tool_call_end|>"
_KIMI_ARGS = "<|tool_call_argument_begin|>"
_KIMI_ID = re.compile(r"(?:functions\.)?([\w.\-]+):\d+")
_MISTRAL = "[TOOL_CALLS"
_MAX = 64


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _deepseek(text: str) -> list[Call]:
    calls: list[Call] = []
    for chunk in closed_blocks(text, _DS_BEGIN, _DS_END):
        head, sep, tail = chunk.rpartition(_DS_SEP)
        if not sep:
            continue
        fence = tail.rfind(_DS_JSON)
        if fence >= 0 and tail.endswith(_DS_FENCE_END):  # V3: type<sep>name ```json args ```
            name, args = tail[:fence], _object(tail[fence + len(_DS_JSON) : -len(_DS_FENCE_END)])
        else:  # V3.1: name<sep>args
            name, args = head, _object(tail)
        if name and args is not None:
            calls.append((name, args))
    return calls


def _kimi_name(call_id: str, args: dict[str, Any], decls: Mapping[str, Declaration]) -> str | None:
    m = _KIMI_ID.fullmatch(call_id)
    if m:
        return m.group(1)
    if not call_id.isdigit() or not decls:
        return None
    if len(decls) == 1:
        return next(iter(decls))
    best, best_score = None, -1
    for name, decl in decls.items():
        props = set(decl.properties or ())
        if not props:
            continue
        score = len(args.keys() & props) - len(args.keys() - props)
        if score > best_score:
            best, best_score = name, score
    return best


def _kimi(text: str, decls: Mapping[str, Declaration]) -> list[Call]:
    calls: list[Call] = []
    for chunk in closed_blocks(text, _KIMI_BEGIN, _KIMI_END):
        call_id, sep, body = chunk.partition(_KIMI_ARGS)
        call_id, body = call_id.strip(), body.strip()
        if not sep or not call_id or any(c.isspace() or c in "<|" for c in call_id):
            continue
        if not (body.startswith("{") and body.endswith("}")):
            continue
        args = _object(body)
        name = _kimi_name(call_id, args, decls) if args is not None else None
        if name and args is not None:
            calls.append((name, args))
    return calls


def _mistral(text: str) -> list[Call]:
    decoder = json.JSONDecoder()
    calls: list[Call] = []
    at = 0
    while len(calls) < _MAX:
        start = text.find(_MISTRAL, at)
        if start < 0:
            break
        i = start + len(_MISTRAL)
        i += text.startswith("]", i)
        args_at = text.find("[ARGS", i)
        if args_at < 0:
            break
        name = text[i:args_at].strip()
        j = args_at + len("[ARGS")
        j += text.startswith("]", j)
        while j < len(text) and text[j].isspace():
            j += 1
        if not name or j >= len(text) or text[j] != "{":
            break
        try:
            args, end = decoder.raw_decode(text, j)
        except (ValueError, RecursionError):
            break
        if not isinstance(args, dict):
            break
        calls.append((name, args))
        at = end
    return calls


_HARMONY_ENDS = ("<|end|>", "<|call|>", "<|return|>")
_HARMONY_TO = re.compile(r"to=([A-Za-z_][A-Za-z0-9_.-]*)")


def _harmony(text: str) -> list[Call]:
    """gpt-oss's harmony messages: a commentary (or analysis) message addressed ``to=`` a
    function and ended by ``<|call|>`` is a call of it (``functions.get_weather``: the name
    after ``functions.``, as vLLM's harmony parser reads it; SGLang keeps only what follows the
    last dot, so a dotted tool name such as ``math.factorial`` is no tool there), its content
    the JSON arguments."""
    calls: list[Call] = []
    finders = [(MarkerFinder(text, t), t) for t in _HARMONY_ENDS]
    at = 0
    while len(calls) < _MAX:
        message = text.find("<|message|>", at)
        if message < 0:
            break
        body_at = message + len("<|message|>")
        ends = [(e, t) for f, t in finders if (e := f.next(body_at)) >= 0]
        if not ends:
            break
        end, token = min(ends)
        header_from = max(text.rfind(t, at, message) for t in ("<|start|>", *_HARMONY_ENDS))
        header = text[max(header_from, at) : message]
        channel = header.rpartition("<|channel|>")[2].strip().lower()
        at = end + len(token)
        target = _HARMONY_TO.search(header)
        if token != "<|call|>" or target is None:
            continue
        if not channel.startswith(("commentary", "analysis")):
            continue
        body = text[body_at:end].strip()
        args = _object(body) if body else {}
        if args is not None:
            name = target.group(1)
            calls.append(
                (name[len("functions.") :] if name.startswith("functions.") else name, args)
            )
    return calls


_STRIPPED_TO = "to=functions."
_NAME_CHARS = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_GLUED = "commentary"  # the channel of calls to functions


def stripped_harmony_calls(text: str, decls: Mapping[str, Declaration] | None = None) -> list[Call]:
    """gpt-oss's calls in a completion decoded with ``skip_special_tokens=True`` (veRL's and
    TRL's decode): harmony's tokens are gone and what stays of a call is ``to=functions.NAME``,
    ``json`` (from ``<|constrain|>json``) and the JSON arguments, as ``commentary
    to=functions.get_weather json{"city": "Paris"}``. Where the recipient stood before the
    channel (``assistant to=functions.NAME<|channel|>commentary``) the channel's name follows
    the tool's with nothing between: it is cut off, unless ``decls`` declare the tool so named
    and not the shorter one (calls go on the commentary channel; ``analysis`` is left alone, a
    tool may be ``sentiment_analysis``). A recipient not followed by a JSON object
    is no call (so are arguments that hold a recipient's text themselves). One pass: each
    recipient is read once, and its arguments decoded up to the next one."""
    calls: list[Call] = []
    at = 0
    while len(calls) < _MAX:
        found = text.find(_STRIPPED_TO, at)
        if found < 0:
            break
        named = _NAME_CHARS.match(text, found + len(_STRIPPED_TO))
        at = found + len(_STRIPPED_TO)
        if named is None:
            continue
        name = named.group()
        cut = name[: -len(_GLUED)] if name.endswith(_GLUED) else ""
        if cut and (not decls or (name not in decls and cut in decls)):
            name = cut  # the channel's name glued to the tool's, unless a tool is so named
        rest = named.end()
        while rest < len(text) and text[rest] == " ":
            rest += 1
        if text.startswith("json", rest):
            rest += len("json")
        while rest < len(text) and text[rest] == " ":
            rest += 1
        if not text.startswith("{", rest):
            continue
        following = text.find(_STRIPPED_TO, rest)
        read = _object_within(text, rest, following if following >= 0 else len(text))
        if read is not None:
            calls.append((name, read[0]))
            at = rest + read[1]
    return calls


def _object_within(text: str, start: int, stop: int) -> tuple[dict[str, Any], int] | None:
    """The JSON object that opens ``text[start:stop]`` and its length, or None. Decoded from
    that slice alone, so that a reader of many markers decodes each part of the text once (a
    failed decode's error counts the lines before it: from the text's start, quadratic)."""
    try:
        value, end = _DECODER.raw_decode(text[start:stop])
    except (ValueError, RecursionError):
        return None
    return (value, end) if isinstance(value, dict) else None


_DECODER = json.JSONDecoder()


_KIMI_STRIPPED = re.compile(r"functions\.([A-Za-z_][\w.\-]*):\d+\s*(?=\{)")


def stripped_kimi_calls(text: str) -> list[Call]:
    """Kimi-K2's calls in a completion decoded with ``skip_special_tokens=True``: its section
    and call tokens are gone and each call is its id and its JSON arguments with nothing
    between, ``functions.get_weather:0{"city": "Paris"}``. An id not followed by a JSON object
    is no call. Each call's arguments are decoded up to the next id (one pass)."""
    calls: list[Call] = []
    ids = list(itertools.islice(_KIMI_STRIPPED.finditer(text), _MAX * 4))
    for k, found in enumerate(ids):
        stop = ids[k + 1].start() if k + 1 < len(ids) else len(text)
        read = _object_within(text, found.end(), stop)
        if read is not None:
            calls.append((found.group(1), read[0]))
            if len(calls) >= _MAX:
                break
    return calls


_GLUED_FENCE = "\n```json\n"
_GLUED_RETRIES = 8


def stripped_glued_calls(text: str, decls: Mapping[str, Declaration] | None) -> list[Call]:
    """DeepSeek's and Mistral's calls in a completion decoded with ``skip_special_tokens=True``:
    their tokens are gone and each call is the tool's name glued to its JSON arguments,
    ``get_weather{"city": "Paris"}`` (DeepSeek-V3.1, Mistral's ``[TOOL_CALLS]NAME[ARGS]``), or
    DeepSeek-V3's type glued before the name and the arguments fenced,
    ``functionget_weather\n```json\n{...}\n```````. Where a name starts cannot be told
    without the tools, so only ``decls``' names are looked for (longest first), not inside
    another word. Each call's arguments are decoded up to the next name (or, a few times, to
    the end, where an argument's text holds a name itself); one pass."""
    if not decls:
        return []
    names = sorted(decls, key=len, reverse=True)
    pattern = re.compile(
        r"(?:(?<=function)|(?<![\w.\-]))("
        + "|".join(re.escape(n) for n in names)
        + r")(?:\n```json\n)?(?=\{)"
    )
    found = list(itertools.islice(pattern.finditer(text), _MAX * 4))
    calls: list[Call] = []
    retries, done = 0, 0
    for k, match in enumerate(found):
        if match.start() < done:  # inside the arguments of a call already read
            continue
        stop = found[k + 1].start() if k + 1 < len(found) else len(text)
        read = _object_within(text, match.end(), stop)
        if read is None and stop < len(text) and retries < _GLUED_RETRIES:
            retries += 1
            read = _object_within(text, match.end(), len(text))
        if read is not None:
            calls.append((match.group(1), read[0]))
            done = match.end() + read[1]
            if len(calls) >= _MAX:
                break
    return calls


def special_token_calls(
    text: str, decls: Mapping[str, Declaration] | None
) -> tuple[list[Call], str] | None:
    """The calls of the first of these formats the text holds, with its name; None when it
    holds none of their markers."""
    if _DS_SECTION in text:
        found = _deepseek(text)
        if found:
            return found, "deepseek"
    if _KIMI_SECTION in text:
        found = _kimi(text, decls or {})
        if found:
            return found, "kimi_k2"
    if "<minimax:tool_call>" in text:
        found = minimax_calls(text, decls)
        if found:
            return found, "minimax_m2"
    if "<|call|>" in text and "to=" in text:
        found = _harmony(text)
        if found:
            return found, "harmony"
    if _MISTRAL in text and "[ARGS" in text:
        found = _mistral(text)
        if found:
            return found, "mistral"
    return None
