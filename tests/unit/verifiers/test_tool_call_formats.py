"""Tool calls in the formats of Qwen3-Coder, GLM-4.5, MiniMax-M2, DeepSeek-V3 and V3.1, Kimi-K2,
Mistral and gpt-oss read as SGLang's own parsers read them.

SGLang's ``Qwen3CoderDetector``, ``Glm4MoeDetector``, ``DeepSeekV3Detector``,
``DeepSeekV31Detector``, ``KimiK2Detector``, ``MistralDetector``, ``GptOssDetector``
(gpt-oss's harmony messages) and ``MinimaxM2Detector`` (sglang 0.5.23, pinned,
loaded by path: tests/sglang_peer.py) are the parsers a serving engine applies to these models'
output. The
calls are BFCL's ground truths (simple_python, multiple, parallel, parallel_multiple and the live
categories: every argument type BFCL's functions declare), written as each model's chat template
writes a call (a string as it is, any other value as JSON), and mutated (numbers as floats,
null, a string that reads as a number, a string with newlines, an object for a string
parameter); the tools are the entries' function documents as OpenAI definitions (BFCL's type
names as JSON Schema's). referee's reading with the tools' declarations must give SGLang's
calls, name and arguments, every one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import sglang_peer
from bfcl_peer import entries

from referee.verifiers.tool_call_reading import parse_tool_calls
from referee.verifiers.tool_calls import grade_tool_calls
from referee.verifiers.tool_declarations import declarations_from_tools

CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
_JSON_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}
Calls = list[tuple[str, dict[str, Any]]]


def as_json_schema(schema: Any) -> Any:
    """A BFCL function document's parameters with JSON Schema's type names."""
    if isinstance(schema, dict):
        out = {k: as_json_schema(v) for k, v in schema.items()}
        if isinstance(out.get("type"), str):
            out["type"] = _JSON_TYPES.get(out["type"], out["type"])
        return out
    if isinstance(schema, list):
        return [as_json_schema(v) for v in schema]
    return schema


def openai_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f["name"],
                "description": f.get("description", ""),
                "parameters": as_json_schema(f["parameters"]),
            },
        }
        for f in functions
    ]


def truth(ground_truth: list[dict[str, Any]]) -> Calls:
    calls = []
    for call in ground_truth:
        for name, args in call.items():
            values = {k: [v for v in vs if v != ""] for k, vs in args.items()}
            calls.append((name, {k: vs[0] for k, vs in values.items() if vs}))
    return calls


def mutants(calls: Calls) -> list[Calls]:
    out = [calls]
    name, args = calls[0]
    for key, value in sorted(args.items())[:2]:
        if isinstance(value, int) and not isinstance(value, bool):
            out.append([(name, {**args, key: float(value)}), *calls[1:]])
        if isinstance(value, str):
            out.append([(name, {**args, key: "42"}), *calls[1:]])
            out.append([(name, {**args, key: value + "\nsecond line"}), *calls[1:]])
            out.append([(name, {**args, key: {"text": value}}), *calls[1:]])
        out.append([(name, {**args, key: None}), *calls[1:]])
    return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def qwen3_coder(calls: Calls) -> str:
    """As Qwen3-Coder's chat template writes calls."""
    out = []
    for name, args in calls:
        params = "".join(f"<parameter={k}>\n{_text(v)}\n</parameter>\n" for k, v in args.items())
        out.append(f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>")
    return "\n".join(out)


def glm45(calls: Calls) -> str:
    """As GLM-4.5's chat template writes calls."""
    out = []
    for name, args in calls:
        pairs = "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{_text(v)}</arg_value>\n" for k, v in args.items()
        )
        out.append(f"<tool_call>{name}\n{pairs}</tool_call>")
    return "\n".join(out)


DS_SECTION, DS_SECTION_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_BEGIN, DS_END, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def deepseek_v3(calls: Calls) -> str:
    """As DeepSeek-V3's (and R1-0528's) chat template writes calls."""
    body = "".join(
        f"{DS_BEGIN}function{DS_SEP}{n}\n```json\n{json.dumps(a, ensure_ascii=False)}\n```{DS_END}"
        for n, a in calls
    )
    return f"{DS_SECTION}{body}{DS_SECTION_END}"


def deepseek_v31(calls: Calls) -> str:
    """As DeepSeek-V3.1's chat template writes calls."""
    body = "".join(
        f"{DS_BEGIN}{n}{DS_SEP}{json.dumps(a, ensure_ascii=False)}{DS_END}" for n, a in calls
    )
    return f"{DS_SECTION}{body}{DS_SECTION_END}"


def kimi_k2(calls: Calls) -> str:
    """As Kimi-K2's chat template writes calls (``functions.NAME:INDEX`` ids)."""
    body = "".join(
        f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>"
        f"{json.dumps(a, ensure_ascii=False)}<|tool_call_end|>"
        for i, (n, a) in enumerate(calls)
    )
    return f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"


def mistral(calls: Calls) -> str:
    """As Mistral's newer tokenizers (Mistral Small 3.2, Magistral, Devstral) write calls."""
    return "".join(f"[TOOL_CALLS]{n}[ARGS]{json.dumps(a, ensure_ascii=False)}" for n, a in calls)


def gpt_oss(calls: Calls) -> str:
    """As gpt-oss writes a turn that calls tools (harmony: the reasoning on the analysis channel,
    each call a commentary message to ``functions.NAME`` ended by ``<|call|>``)."""
    out = "<|channel|>analysis<|message|>I should call the tool.<|end|>"
    for n, a in calls:
        out += (
            f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json"
            f"<|message|>{json.dumps(a, ensure_ascii=False)}<|call|>"
        )
    return out


def minimax_m2(calls: Calls) -> str:
    """As MiniMax-M2's chat template writes calls."""
    invokes = "".join(
        f'<invoke name="{n}">\n'
        + "".join(f'<parameter name="{k}">{_text(v)}</parameter>\n' for k, v in a.items())
        + "</invoke>\n"
        for n, a in calls
    )
    return f"<minimax:tool_call>\n{invokes}</minimax:tool_call>"


FORMATS = {
    "qwen3_coder": (qwen3_coder, "qwen3_coder_detector", "Qwen3CoderDetector"),
    "glm45": (glm45, "glm4_moe_detector", "Glm4MoeDetector"),
    "deepseek_v3": (deepseek_v3, "deepseekv3_detector", "DeepSeekV3Detector"),
    "deepseek_v31": (deepseek_v31, "deepseekv31_detector", "DeepSeekV31Detector"),
    "kimi_k2": (kimi_k2, "kimik2_detector", "KimiK2Detector"),
    "mistral": (mistral, "mistral_detector", "MistralDetector"),
    "harmony": (gpt_oss, "gpt_oss_detector", "GptOssDetector"),
    "minimax_m2": (minimax_m2, "minimax_m2", "MinimaxM2Detector"),
}
ONE_CALL = {"harmony"}  # a gpt-oss turn ends at its call's <|call|>: one call a completion
FOUND_AS = {"deepseek_v3": "deepseek", "deepseek_v31": "deepseek"}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_calls_read_as_sglangs_parser_reads_them(fmt: str) -> None:
    write, module, detector = FORMATS[fmt]
    parser = getattr(sglang_peer.module(module), detector)
    total, known, wrong = 0, 0, []
    for category in CATEGORIES:
        for row, ground_truth in entries(category):
            definitions = openai_tools(row["function"])
            peer_tools = sglang_peer.tools(definitions)
            decls = declarations_from_tools(definitions)
            for calls in mutants(truth(ground_truth)):
                if fmt in ONE_CALL and len(calls) > 1:
                    continue
                text = write(calls)
                theirs = [
                    (c.name, json.loads(c.parameters))
                    for c in parser().detect_and_parse(text, peer_tools).calls
                ]
                got, found_as = parse_tool_calls(text, decls)
                ours = [(c.name, c.arguments) for c in got]
                total += 1
                dotted = fmt == "harmony" and any("." in n for n, _ in calls)
                if dotted and not theirs and ours == calls:
                    # SGLang keeps what follows the last dot of `functions.math.factorial` and
                    # then finds no such tool; referee reads `math.factorial`, as vLLM does
                    known += 1
                    continue
                if ours != theirs or found_as != FOUND_AS.get(fmt, fmt):
                    wrong.append((row["id"], text, theirs, ours, found_as))
    assert total > (3000 if fmt in ONE_CALL else 5000)
    assert not wrong, f"{len(wrong)} of {total} differ: {wrong[:5]}"
    assert known < 0.3 * total


def test_without_tools_json_values_are_read() -> None:
    """With no declaration (no ``tools``), a value that reads as JSON is that value (the engines
    keep it as text); anything else is the text."""
    text = qwen3_coder([("f", {"n": 3, "ok": True, "xs": [1, 2], "s": "Paris", "none": None})])
    [(call)], _ = parse_tool_calls(text)
    assert call.arguments == {"n": 3, "ok": True, "xs": [1, 2], "s": "Paris", "none": None}
    [(call)], _ = parse_tool_calls(glm45([("f", {"n": 3, "s": "a b"})]))
    assert call.arguments == {"n": 3, "s": "a b"}
    reference = [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]
    for write in (qwen3_coder, glm45):
        reply = "<think>Two days?</think>\n" + write(
            [("get_weather", {"city": "Paris", "days": 3})]
        )
        result = grade_tool_calls(reply, reference)
        assert result.score == 1.0 and result.format in ("qwen3_coder", "glm45"), result


def test_what_is_not_a_call() -> None:
    for text in (
        "<tool_call>I would call the weather tool here.</tool_call>",
        "<tool_call>{not json</tool_call>",
        "<tool_call>\n<function=>\n</function>\n</tool_call>",
    ):
        assert parse_tool_calls(text)[0] == [], text


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>" + "<function=f>" * 200_000,
        "<tool_call><function=f>" + "<parameter=a>" * 200_000,
        "<tool_call>f" + "<arg_key>k</arg_key>" * 100_000 + "<arg_value>",
        "<tool_call><function=f><parameter=a>" + "[" * 500_000 + "</parameter></function>",
    ],
)
def test_hostile_xml_is_read_in_one_pass(text: str) -> None:
    """Unclosed markers by the hundred thousand, a value of half a million brackets: each is
    read by one pass of ``str.find`` (a regex engine's lazy scans would be quadratic here)."""
    calls, _ = parse_tool_calls(text)
    assert len(calls) <= 64


def test_kimi_bare_counter_ids_name_the_best_fitting_tool() -> None:
    """Kimi-K2 sometimes writes a bare counter (``3``) as the call's id: the tool is the one whose
    parameters best fit the arguments, as SGLang infers it; with no tools, no call."""
    detector = sglang_peer.module("kimik2_detector").KimiK2Detector

    def tool(name: str, *params: str) -> dict[str, Any]:
        props = {p: {"type": "string"} for p in params}
        return {"type": "function", "function": {"name": name, "parameters": {"properties": props}}}

    definitions = [tool("weather", "city"), tool("flights", "from", "to")]
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>3<|tool_call_argument_begin|>"
        '{"from": "CDG", "to": "JFK"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    theirs = detector().detect_and_parse(text, sglang_peer.tools(definitions)).calls
    got, _ = parse_tool_calls(text, declarations_from_tools(definitions))
    assert (
        [(c.name, c.arguments) for c in got]
        == [(c.name, json.loads(c.parameters)) for c in theirs]
        == [("flights", {"from": "CDG", "to": "JFK"})]
    )
    assert parse_tool_calls(text)[0] == []


def test_special_token_calls_after_a_think_block() -> None:
    reference = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    for write in (deepseek_v3, deepseek_v31, kimi_k2, mistral, gpt_oss, minimax_m2):
        reply = "<think>Paris.</think>\n" + write([("get_weather", {"city": "Paris"})])
        assert grade_tool_calls(reply, reference).score == 1.0, write.__name__
        wrong = "<think>x</think>" + write([("get_weather", {"city": "Lyon"})])
        assert grade_tool_calls(wrong, reference).score == 0.0, write.__name__


@pytest.mark.parametrize(
    "text",
    [
        "<｜tool▁calls▁begin｜>" + "<｜tool▁call▁begin｜>" * 200_000,
        "<|tool_calls_section_begin|>"
        + "<|tool_call_begin|>1<|tool_call_argument_begin|>{" * 50_000,
        "[TOOL_CALLS]f[ARGS]" + "[" * 500_000,
        "[TOOL_CALLS]" * 200_000 + "[ARGS]{}",
        "<minimax:tool_call>" + '<invoke name="f">' * 100_000 + "</minimax:tool_call>",
        '<minimax:tool_call><invoke name="f">'
        + '<parameter name="a">' * 100_000
        + "</minimax:tool_call>",
        "to=functions.f json{" * 100_000,
        'to=functions.f {"a": "' * 100_000,
        "to=functions." * 200_000 + 'f {"a": 1}',
        'to=functions.f {"a": ' + "[" * 100_000,
        "<function=f>{" * 100_000,
        '<function=f>{"a": ' + "[" * 100_000 + "</function>",
        "<function=f>" * 100_000 + "</function>",
        "functions.f:0{" * 100_000,
        'functions.f:0{"a": "' * 100_000,
        "functions.f:0" + "{" * 100_000,
    ],
)
def test_hostile_special_token_text_is_read_in_one_pass(text: str) -> None:
    calls, _ = parse_tool_calls(text)
    assert len(calls) <= 64


PIECES = (
    "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>",
    "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "<minimax:tool_call>",
    "</minimax:tool_call>", '<invoke name="', '<parameter name="', '">', "</invoke>",
    DS_SECTION, DS_BEGIN, DS_SEP, DS_END, "\n```json\n", "\n```", "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>", "functions.f:0",
    "[TOOL_CALLS]", "[ARGS]", "<|channel|>commentary to=functions.f <|constrain|>json",
    "<|message|>", "<|call|>", "<|end|>", "<|start|>assistant", "f", "x", ">", "\n", " ", "{",
    "}", "[", "]", '"', "'", ":", ",", "1", "null", "true", '{"a": 1}', "</think>", "(", ")", "=",
)  # fmt: skip


def test_random_marker_soup_never_raises() -> None:
    """20,000 texts of random pieces of every format's markers and JSON: each is read (or not)
    without an exception, with tools declared and without, never more than 64 calls."""
    import random

    rng = random.Random(7)
    decls = declarations_from_tools(
        [{"type": "function", "function": {"name": "f", "parameters": {"properties": {
            "a": {"type": "integer"}, "x": {"type": "array"}, "b": {"type": "boolean"}}}}}]
    )  # fmt: skip
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40)))
        for declared in (None, decls):
            calls, _fmt = parse_tool_calls(text, declared)
            assert len(calls) <= 64
            assert all(isinstance(c.arguments, dict) for c in calls)


HARMONY_SPECIAL = (
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|channel|>",
    "<|constrain|>",
    "<|call|>",
)


def skip_special_tokens(text: str) -> str:
    """What ``tokenizer.decode(ids, skip_special_tokens=True)`` leaves of a harmony turn (veRL's
    and TRL's decode of a completion): the text without gpt-oss's special tokens."""
    for token in HARMONY_SPECIAL:
        text = text.replace(token, "")
    return text


def gpt_oss_recipient_first(calls: Calls) -> str:
    """Harmony's other header order: the recipient in the role section, before the channel."""
    return "".join(
        f"<|start|>assistant to=functions.{n}<|channel|>commentary <|constrain|>json"
        f"<|message|>{json.dumps(a, ensure_ascii=False)}<|call|>"
        for n, a in calls
    )


@pytest.mark.slow
@pytest.mark.parametrize("write", [gpt_oss, gpt_oss_recipient_first])
def test_harmony_calls_decoded_without_special_tokens_read_the_same(write: Any) -> None:
    """A gpt-oss completion decoded with ``skip_special_tokens=True`` keeps ``to=functions.NAME``,
    ``json`` and the arguments: read, it gives the calls the whole turn gives (SGLang's, by the
    test above), on BFCL's ground truths and their mutants, both header orders."""
    total, wrong = 0, []
    for category in CATEGORIES:
        for row, ground_truth in entries(category):
            decls = declarations_from_tools(openai_tools(row["function"]))
            for calls in mutants(truth(ground_truth)):
                if len(calls) > 1:
                    continue
                text = write(calls)
                whole, _ = parse_tool_calls(text, decls)
                stripped, fmt = parse_tool_calls(skip_special_tokens(text), decls)
                total += 1
                got = [(c.name, c.arguments) for c in stripped]
                if (
                    got != [(c.name, c.arguments) for c in whole]
                    or got != calls
                    or fmt != "harmony"
                ):
                    wrong.append((row["id"], skip_special_tokens(text)[:200], got, fmt))
    assert total > 3000
    assert not wrong, f"{len(wrong)} of {total} differ: {wrong[:5]}"
    # the analysis before the call and prose after it change nothing; no JSON after it: no call
    prose = skip_special_tokens(gpt_oss([("get_weather", {"city": "Paris"})])) + " Done."
    assert [(c.name, c.arguments) for c in parse_tool_calls(prose)[0]] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert parse_tool_calls("I will send it to=functions.get_weather soon") == ([], None)


KIMI_SPECIAL = (
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
)


def without(text: str, tokens: tuple[str, ...]) -> str:
    """``text`` with ``tokens`` taken out, as ``skip_special_tokens=True`` decodes it."""
    for token in tokens:
        text = text.replace(token, "")
    return text


def stripped_reading_differences(
    write: Any, tokens: tuple[str, ...], fmt: str
) -> tuple[int, list[Any]]:
    """Each BFCL ground truth and mutant written by ``write`` after some prose, read whole and
    read with ``tokens`` taken out: (how many, those whose stripped reading is not the calls,
    the whole text's calls, in format ``fmt``)."""
    total, wrong = 0, []
    for category in CATEGORIES:
        for row, ground_truth in entries(category):
            decls = declarations_from_tools(openai_tools(row["function"]))
            for calls in mutants(truth(ground_truth)):
                text = "Let me look it up. " + write(calls)
                whole, _ = parse_tool_calls(text, decls)
                stripped = without(text, tokens)
                got, found = parse_tool_calls(stripped, decls)
                total += 1
                pairs = [(c.name, c.arguments) for c in got]
                same = pairs == [(c.name, c.arguments) for c in whole] == calls
                if not same or found != fmt:
                    wrong.append((row["id"], stripped[:200], pairs, found))
    return total, wrong


@pytest.mark.slow
def test_kimi_calls_decoded_without_special_tokens_read_the_same() -> None:
    """A Kimi-K2 completion decoded with ``skip_special_tokens=True`` keeps each call's
    ``functions.NAME:INDEX`` id and its JSON arguments: read, it gives the calls the whole text
    gives (SGLang's, by the test above), parallel calls too, on BFCL's ground truths and their
    mutants."""
    total, wrong = stripped_reading_differences(kimi_k2, KIMI_SPECIAL, "kimi_k2")
    assert total > 5000
    assert not wrong, f"{len(wrong)} of {total} differ: {wrong[:5]}"
    assert parse_tool_calls("see functions.get_weather:0 in the docs") == ([], None)


GLUED_SPECIAL = (DS_SECTION, DS_SECTION_END, DS_BEGIN, DS_END, DS_SEP, "[TOOL_CALLS]", "[ARGS]")


@pytest.mark.slow
@pytest.mark.parametrize("write", [deepseek_v3, deepseek_v31, mistral])
def test_glued_calls_decoded_without_special_tokens_read_the_same(write: Any) -> None:
    """DeepSeek-V3's, V3.1's and Mistral's completions decoded with ``skip_special_tokens=True``
    keep each call's name glued to its JSON arguments (V3: its ``function`` type before the name
    and the arguments fenced): read with the tools declared, they give the calls the whole text
    gives (SGLang's, by the test above), parallel calls too, on BFCL's ground truths and their
    mutants; without the tools there is no telling where a name starts, and nothing is read."""
    total, wrong = stripped_reading_differences(write, GLUED_SPECIAL, "glued")
    assert total > 5000
    assert not wrong, f"{len(wrong)} of {total} differ: {wrong[:5]}"
    stripped = without(
        "Let me check. " + write([("get_weather", {"city": "Paris"})]), GLUED_SPECIAL
    )
    assert parse_tool_calls(stripped)[0] == []  # no tools: no telling where a name starts


def test_glued_names_are_whole_words_and_hostile_text_is_read_at_once() -> None:
    tools = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("get_weather", "weather", "search")
    ]
    decls = declarations_from_tools(tools)
    read = parse_tool_calls('forget_weather{"a": 1} get_weather{"city": "Paris"}', decls)
    assert [(c.name, c.arguments) for c in read[0]] == [("get_weather", {"city": "Paris"})]
    inside = 'search{"q": "what does weather{\\"x\\": 1} mean"}weather{"day": 2}'
    got = [(c.name, c.arguments) for c in parse_tool_calls(inside, decls)[0]]
    assert got == [("search", {"q": 'what does weather{"x": 1} mean'}), ("weather", {"day": 2})]
    for text in (
        "search{" * 100_000,
        "search" * 100_000 + "{",
        'search{"q": "' + "weather{" * 50_000,
        "functionsearch\n```json\n{" * 50_000,
    ):
        calls, _ = parse_tool_calls(text, decls)
        assert len(calls) <= 64
