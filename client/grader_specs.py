"""Grader objects as trainers hand them over: parsing, and filling in a row's reference.

A trainer's dataset carries the answer in its own column (TRL: ``answer``/``solution``, veRL:
``reward_model.ground_truth``, OpenRLHF: ``labels``). :func:`fill_grader` puts it into the
grader where the grader needs one and has none (recursing into ``weighted`` parts and the inner
grader of ``length_penalty``); a code grader without tests takes the row's tests, including
the ``{"inputs": [...], "outputs": [...]}`` form of APPS/PRIME/veRL code data.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from referee.client.packed_tests import unpack_tests

__all__ = [
    "APPS_SOURCES",
    "OPEN_INSTRUCT_VERIFIERS",
    "code_prefix",
    "dataset_grader",
    "fill_grader",
    "fill_item",
    "instructions_from_value",
    "pairs_as_tests",
    "parse_grader",
    "plain",
    "row_tests",
    "tests_from_value",
    "tool_call_blocks",
    "tool_calls_from_value",
    "tools_from_value",
]

NEEDS_REFERENCE = frozenset(
    {"math", "multiple_choice", "string_check", "prm_mc", "text_similarity", "sql", "answer_match"}
)
MAX_GRADER_DEPTH = 60
"""Deepest nesting of lists and objects a grader may have (``weighted`` in ``weighted`` ...)."""
_TOO_DEEP = f"the grader nests lists and objects more than {MAX_GRADER_DEPTH} levels deep"
MAY_TAKE_REFERENCE = frozenset({"rubric", "genrm"})


def plain(value: Any) -> Any:
    """Mappings and sequences (including OmegaConf's DictConfig/ListConfig, which veRL passes
    as reward kwargs) as plain dicts and lists."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars (veRL's non-tensor batch)
        return plain(value.tolist())
    return value


def _depth(value: Any, limit: int) -> int:
    """How deep lists and dicts nest in ``value``, counted without recursion up to ``limit + 1``
    (deeper is not walked)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > limit:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_grader(spec: Any) -> dict[str, Any]:
    """A grader from a dict, a pydantic model, a mapping-like config or a JSON string."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the grader is not valid JSON: {exc.msg}") from exc
        except RecursionError:  # deeper than Python's parser goes
            raise ValueError(_TOO_DEEP) from None
    if _depth(spec, MAX_GRADER_DEPTH) > MAX_GRADER_DEPTH:
        raise ValueError(_TOO_DEEP)
    spec = plain(spec)
    if not isinstance(spec, dict) or "type" not in spec:
        raise ValueError('a grader is a JSON object with a `type`, e.g. {"type": "math"}')
    return spec


def reference_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    value = plain(value)
    if isinstance(value, list) and len(value) == 1:
        return reference_text(value[0])
    return value if isinstance(value, str) else json.dumps(value, default=str)


_UNREADABLE: Any = object()


def _json_value(value: Any) -> Any:
    """A row's value as plain Python: JSON text decoded (text that is not JSON, or nests past
    the parser's recursion limit: ``_UNREADABLE``), a dataset's own types made plain."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return _UNREADABLE
    return plain(value)


def _io_text(value: Any) -> str:
    """An APPS/TACO input or output: a string, or its lines as a list."""
    return "\n".join(str(v) for v in value) if isinstance(value, list) else str(value)


_WRAPPED = {"expected_wrapped": True}


def _call_test(fn_name: str, given: Any, expected: Any) -> dict[str, Any] | None:
    """One call-based test: LiveCodeBench's input is its arguments' JSON, one per line, and its
    output the return value's JSON; APPS/TACO give the arguments as a list and wrap the return
    value in a one-item list (taken out: ``expected_wrapped``). None when a LiveCodeBench input
    is not JSON."""
    if isinstance(given, str):
        try:
            args = [json.loads(line) for line in given.split("\n") if line.strip()]
        except ValueError:
            return None
        if isinstance(expected, str):
            try:
                expected = json.loads(expected)
            except ValueError:
                pass  # a plain string as the return value
    else:
        args = given if isinstance(given, list) else [given]
        if isinstance(expected, list) and len(expected) == 1:
            return {"fn_name": fn_name, "args": args, "expected": expected[0], **_WRAPPED}
    return {"fn_name": fn_name, "args": args, "expected": expected}


def _fn_name(value: Mapping[str, Any]) -> str | None:
    """``fn_name``, ``func_name``, or the ``func_name`` of a test's ``metadata`` (DeepCoder's
    LiveCodeBench rows)."""
    metadata = value.get("metadata")
    name = value.get("fn_name") or value.get("func_name")
    if not name and isinstance(metadata, Mapping):
        name = metadata.get("func_name")
    return name if isinstance(name, str) and name else None


def pairs_as_tests(
    pairs: list[tuple[Any, Any]], fn_name: str | None
) -> list[dict[str, Any]] | None:
    """(input, output) pairs as stdin/stdout tests, or with ``fn_name`` as calls of it; None
    when a call's input is not JSON."""
    if fn_name is None:
        return [{"stdin": _io_text(i), "stdout": _io_text(o)} for i, o in pairs]
    tests = [_call_test(fn_name, i, o) for i, o in pairs]
    return None if any(t is None for t in tests) else [t for t in tests if t is not None]


def _livecodebench_tests(cases: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    tests: list[dict[str, Any]] = []
    for case in cases:
        functional = case.get("testtype") == "functional"
        fn_name = _fn_name(case) if functional else None
        found = (
            None
            if functional and fn_name is None
            else pairs_as_tests([(case["input"], case["output"])], fn_name)
        )
        if found is None:
            return None
        tests.extend(found)
    return tests


def _assert_tests(value: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """HumanEval's ``test`` (a ``check(candidate)``) with its ``entry_point``; MBPP's
    ``test_list`` (assert statements, one test each, after its ``test_setup_code``)."""
    if isinstance(value.get("test"), str) and value["test"].strip():
        entry = value.get("entry_point")
        test: dict[str, Any] = {"test_code": value["test"]}
        if isinstance(entry, str) and entry:
            test["entry_point"] = entry
        return [test]  # no entry_point for a check(): the grader's validation says so
    asserts = value.get("test_list")
    if isinstance(asserts, list) and asserts and all(isinstance(a, str) for a in asserts):
        setup = value.get("test_setup_code")
        head = setup + "\n" if isinstance(setup, str) and setup.strip() else ""
        return [{"test_code": head + a} for a in asserts]
    return None


def tests_from_value(value: Any) -> list[dict[str, Any]] | None:
    """Tests from a list of test objects, or JSON text of one of these, or one packed as
    base64 of zlib of a pickle (LiveCodeBench's ``private_test_cases``, open-instruct's
    ``encode_tests``; read as plain values only: :mod:`referee.client.packed_tests`):

    - ``{"inputs": [...], "outputs": [...]}`` (APPS, TACO, LiveCodeBench's packed form): each
      input fed as stdin, each output the expected stdout; with ``fn_name`` (or ``func_name``)
      each pair is a call of that function (APPS: the arguments as a list, the return value
      wrapped in a list; LiveCodeBench: the arguments' JSON one per line);
    - LiveCodeBench's test cases, ``[{"input", "output", "testtype"}]``: ``stdin`` tests, or
      ``functional`` ones with a ``fn_name``/``func_name`` beside them;
    - HumanEval's ``{"test", "entry_point"}``, MBPP's ``{"test_list", "test_setup_code"?}`` or a
      list of assert statements: assert tests.
    """
    return _read_tests(value)[0]


def _read_tests(value: Any) -> tuple[list[dict[str, Any]] | None, bool]:
    """``tests_from_value``'s tests, and whether they are LiveCodeBench's test cases."""
    packed = value
    value = _json_value(value)
    if value is _UNREADABLE and isinstance(packed, str):
        value = plain(unpack_tests(packed))  # LiveCodeBench's / open-instruct's packed tests
    if value is _UNREADABLE or value is None:
        return None, False
    if isinstance(value, dict) and (asserts := _assert_tests(value)) is not None:
        return asserts, False
    if isinstance(value, list) and value and all(isinstance(t, str) for t in value):
        return [{"test_code": t} for t in value], False  # assert statements, one test each
    if isinstance(value, list) and all(isinstance(t, dict) for t in value):
        if value and all("input" in t and "output" in t and "stdin" not in t for t in value):
            return _livecodebench_tests(value), True
        return value, False
    if isinstance(value, dict) and isinstance(value.get("inputs"), list):
        outputs = value.get("outputs") or []
        if not isinstance(outputs, list) or len(outputs) != len(value["inputs"]):
            return None, False
        pairs = list(zip(value["inputs"], outputs, strict=True))
        return pairs_as_tests(pairs, _fn_name(value)), False
    return None, False


def code_prefix(value: Any) -> str | None:
    """HumanEval's ``prompt`` in a row (or JSON text of one), which a completion continues: the
    program is ``prompt + completion``, as HumanEval's harness runs it. Only a prompt that is
    code defining the row's ``entry_point``: a chat prompt in words is no program's start."""
    value = _json_value(value)
    if not isinstance(value, Mapping):
        return None
    prompt, entry = value.get("prompt"), value.get("entry_point")
    if not (isinstance(prompt, str) and isinstance(entry, str) and entry):
        return None
    defined = re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", prompt, re.MULTILINE)
    return prompt if defined else None


_TEST_COLUMNS = ("tests", "input_output", "public_test_cases")
_ROW_TEST_KEYS = ("prompt", "test", "entry_point", "test_list", "test_setup_code")


def _cases(value: Any) -> list[Any] | None:
    """LiveCodeBench's ``private_test_cases``: JSON text of the list, or it packed (base64 of
    zlib of a pickled JSON text, as the dataset ships it). None: no such column or value."""
    if value in (None, "", []):
        return None
    cases = _json_value(value)
    if cases is _UNREADABLE and isinstance(value, str):
        cases = plain(unpack_tests(value))
    return cases if isinstance(cases, list) else None


def row_tests(row: Mapping[str, Any]) -> Any:
    """A code grader's tests in a dataset row, for ``tests_from_value``: its ``tests`` column,
    APPS/TACO's ``input_output``, LiveCodeBench's ``public_test_cases`` and
    ``private_test_cases`` (packed or not; LiveCodeBench grades a solution on both) with the
    function name of its ``metadata``, or the row's own HumanEval (``test``, ``entry_point``,
    ``prompt``), MBPP (``test_list``, ``test_setup_code``) or KodCode (``test``: a pytest file of
    test functions, run as pytest collects them) columns. None: the row has none of these."""
    for column in _TEST_COLUMNS:
        value = row.get(column)
        if value in (None, "", []):
            continue
        if column != "public_test_cases":
            return value
        cases, metadata = _json_value(value), _json_value(row.get("metadata"))
        if not isinstance(cases, list):
            return value
        cases += _cases(row.get("private_test_cases")) or []  # LiveCodeBench grades on both
        fn_name = _fn_name({"metadata": metadata}) if isinstance(metadata, Mapping) else None
        if fn_name:
            return [{"func_name": fn_name, **c} if isinstance(c, dict) else c for c in cases]
        return cases
    if ("test" in row and "entry_point" in row) or "test_list" in row:
        return {k: row[k] for k in _ROW_TEST_KEYS if k in row}
    if isinstance(row.get("test"), str) and _PYTEST_FILE.search(row["test"]):
        return {"test": row["test"]}  # KodCode's: a pytest file importing `solution`
    return None


_PYTEST_FILE = re.compile(r"^(?:def test|class Test)", re.MULTILINE)


def _literal_value(value: Any) -> Any:
    """A row's value as plain Python, also from the text of a Python literal (open-instruct's
    IFEval ground truth is ``str()`` of a list of dicts: single quotes, ``None``)."""
    read = _json_value(value)
    if read is _UNREADABLE and isinstance(value, str) and len(value) <= 1_000_000:
        try:
            return ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return _UNREADABLE
    return read


def instructions_from_value(value: Any) -> dict[str, Any]:
    """An ``instruction_following`` grader's instructions from a row's reference column: an
    IFEval row (``{"instruction_id_list", "kwargs"}``), ``{"instructions": [...]}`` or a list of
    ``{"id", "kwargs"}``; Tülu 3's RLVR-IFeval ground truth (``{"func_name", ...its
    arguments}``: one instruction, that function's) or open-instruct's IFEvalG rows (a list of
    one ``{"instruction_id": [...], "kwargs": [...]}``); or JSON (or Python-literal) text of one
    of these. Nothing usable: ``{}`` (the grader is then refused for having no instructions)."""
    value = _literal_value(value)
    if value is _UNREADABLE:
        return {}
    if isinstance(value, list) and value and all(isinstance(v, dict) and "id" in v for v in value):
        return {"instructions": value}
    if (
        isinstance(value, list)
        and len(value) == 1
        and isinstance(value[0], dict)
        and "instruction_id" in value[0]
    ):
        value = value[0]
    if isinstance(value, dict):
        if "instruction_id_list" in value or "instruction_id" in value:
            ids = value.get("instruction_id_list", value.get("instruction_id"))
            out = {"instruction_id_list": ids}
            if "kwargs" in value:
                out["kwargs"] = value["kwargs"]
            return out
        if "instructions" in value:
            return {"instructions": value["instructions"]}
        if isinstance(value.get("func_name"), str):
            kwargs = {k: v for k, v in value.items() if k != "func_name"}
            return {"instructions": [{"id": value["func_name"], "kwargs": kwargs}]}
    return {}


def _no_reference(value: Any) -> bool:
    """No reference yet: none, or an OpenAI ``{{item.field}}`` template (the row's reference)."""
    return value is None or (
        isinstance(value, str)
        and value.strip().startswith("{{")
        and value.strip().endswith("}}")
        and value.strip()[2:].lstrip().startswith("item.")
    )


def _bfcl_call(entry: Any) -> dict[str, Any] | None:
    """BFCL's ground truth ``{fn: {arg: [possible values]}}`` as ``{"name", "allowed"}``."""
    if not isinstance(entry, dict) or len(entry) != 1:
        return None
    ((name, allowed),) = entry.items()
    if not isinstance(allowed, dict) or not all(isinstance(v, list) for v in allowed.values()):
        return None
    return {"name": name, "allowed": allowed}


def _tagged_calls(text: str) -> list[dict[str, Any]] | None:
    """ToolRL's ground truth: ``<tool_call>`` blocks of JSON calls (one a line, ``parameters``
    or ``arguments``), beside a ``<think>`` and a ``<response>``; an answer with a
    ``<response>`` and no ``<tool_call>`` makes no call (``[]``). None when it is neither, or a
    block holds anything but calls."""
    text = text.rsplit("</think>", 1)[-1]
    if "<tool_call>" not in text:
        return [] if "<response>" in text else None
    decoder = json.JSONDecoder()
    calls: list[dict[str, Any]] = []
    for block in text.split("<tool_call>")[1:]:
        body = block.split("</tool_call>", 1)[0].strip()
        at = 0
        while at < len(body) and len(calls) <= 64:
            try:
                value, at = decoder.raw_decode(body, at)
            except (json.JSONDecodeError, RecursionError):
                return None
            for call in value if isinstance(value, list) else [value]:
                if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                    return None
                calls.append(call)
            while at < len(body) and body[at].isspace():
                at += 1
    return calls


def tool_calls_from_value(value: Any) -> list[dict[str, Any]] | None:
    """Reference tool calls from a list of ``{"name", "arguments"}`` (or one such object), or
    JSON text of either (xLAM's ``answers`` column is a JSON string), or BFCL's ground truth
    (``[{fn: {arg: [possible values]}}]``, read as ``{"name", "allowed"}``), or ToolRL's
    (``<tool_call>`` blocks of JSON calls, one a line: :func:`_tagged_calls`)."""
    if isinstance(value, str) and ("<tool_call>" in value or "<response>" in value):
        return _tagged_calls(value)
    value = _json_value(value)
    if value is _UNREADABLE:
        return None
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list) and all(isinstance(c, dict) and "name" in c for c in value):
        return value
    if isinstance(value, list) and value:
        bfcl = [_bfcl_call(c) for c in value]
        if all(c is not None for c in bfcl):
            return [c for c in bfcl if c is not None]
    return None


def tools_from_value(value: Any) -> list[dict[str, Any]] | None:
    """A row's tool definitions: a list of OpenAI function definitions or function documents
    (``{"name", "parameters"}``: BFCL's ``function`` column, xLAM's ``tools``), or JSON text of
    one (xLAM's column is a string); None when the value is not that."""
    value = plain(value)
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list) or not value:
        return None
    for tool in value:
        spec = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            return None
    return [dict(t) for t in value]


def _packed_io(given: Any, found: list[dict[str, Any]]) -> bool:
    """Whether tests read from ``given`` came from APPS/TACO's ``{"inputs", "outputs"}`` (an
    object whose tests are no assert tests: HumanEval's and MBPP's objects give those), told
    without parsing ``given`` again (a TACO row's tests run to megabytes)."""
    whole = isinstance(given, Mapping) or (isinstance(given, str) and given.lstrip()[:1] == "{")
    return whole and not any("test_code" in t for t in found)


def tool_call_blocks(calls: Any) -> list[str]:
    """Parsed tool calls (an assistant message's ``tool_calls``, TRL's ``parse_response`` takes
    them out of the content; the Responses API's ``function_call`` items, ``{"name",
    "arguments"}``) as the Hermes blocks a model writes them in, which the ``tool_call`` grader
    reads."""
    blocks = []
    for call in calls if isinstance(calls, list) else []:
        spec = call.get("function", call) if isinstance(call, Mapping) else None
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            continue
        arguments = spec.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                pass
        body = json.dumps({"name": spec["name"], "arguments": arguments}, default=str)
        blocks.append(f"<tool_call>\n{body}\n</tool_call>")
    return blocks


APPS_SOURCES = frozenset({"codecontests", "apps", "codeforces", "taco"})
"""veRL's data sources whose default reward is ``prime_code`` (APPS's ``testing_util``)."""


def fill_item(grader: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """``grader`` with the dataset row as the ``item`` of each ``python``, ``score_model`` or
    ``label_model`` grader that has none (OpenAI's graders read the row as ``item``: the python
    grader's argument, the model graders' ``{{item.*}}`` templates), and each ``sql`` grader
    with no database the row's ``db_id`` as its ``database`` (Spider's and BIRD's rows name
    their SQLite file so) and, with no reference, the row's gold query (Spider's ``query``:
    then, unless the grader says, ``compare: spider``, as Spider's evaluation compares;
    BIRD's ``SQL``: ``compare: set``, as BIRD's does; a veRL row whose ``data_source`` names
    Spider or BIRD likewise), and each ``tool_call`` grader with no ``tools`` the row's tool
    definitions (a ``tools`` column, or BFCL's ``function``: :func:`tools_from_value`) and with
    no reference xLAM's ``answers`` column, and each ``code`` grader of a veRL row whose
    ``data_source`` is one of ``prime_code``'s (codecontests, apps, codeforces, taco) with no
    ``comparison`` the ``apps`` comparison, in ``weighted``, ``length_penalty`` and ``multi``
    too."""
    out = dict(grader)
    kind = out.get("type")
    if kind in ("python", "score_model", "label_model") and not out.get("item"):
        out["item"] = {k: v for k, v in plain(dict(row)).items() if k != "grader"}
    elif kind == "sql":
        if out.get("setup") is None and out.get("database") is None and row.get("db_id"):
            out["database"] = str(row["db_id"])
        column = next((k for k in ("query", "SQL") if isinstance(row.get(k), str)), None)
        if _no_reference(out.get("reference")) and column and row[column]:
            out["reference"] = row[column]
            if "compare" not in out:  # as the data set's own evaluation compares
                out["compare"] = "set" if column == "SQL" else "spider"
        source = str(row.get("data_source") or "").lower()
        if "compare" not in out and ("spider" in source or "bird" in source):
            out["compare"] = "spider" if "spider" in source else "set"  # veRL's rows
    elif kind == "code" and "comparison" not in out:
        if str(row.get("data_source") or "") in APPS_SOURCES:  # veRL's: prime_code's compare
            out["comparison"] = "apps"
    elif kind == "tool_call":
        if out.get("reference") is None and (calls := tool_calls_from_value(row.get("answers"))):
            out["reference"] = calls  # xLAM's rows: the calls in `answers`, JSON text
        found = tools_from_value(row.get("tools", row.get("function")))
        if out.get("tools") is None and found is not None:
            out["tools"] = found
    elif kind == "length_penalty" and isinstance(out.get("grader"), Mapping):
        out["grader"] = fill_item(out["grader"], row)
    elif kind == "weighted":
        out["graders"] = [
            {**p, "grader": fill_item(p["grader"], row)}
            if isinstance(p, Mapping) and isinstance(p.get("grader"), Mapping)
            else p
            for p in out.get("graders", [])
        ]
    elif kind == "multi" and isinstance(out.get("graders"), Mapping):
        out["graders"] = {
            n: fill_item(g, row) if isinstance(g, Mapping) else g for n, g in out["graders"].items()
        }
    return out


def fill_grader(
    grader: Mapping[str, Any], reference: Any = None, tests: Any = None
) -> dict[str, Any]:
    """``grader`` with the row's reference (and tests) filled in where it needs them."""
    out = dict(grader)
    kind = out.get("type")
    if kind in NEEDS_REFERENCE | MAY_TAKE_REFERENCE and _no_reference(out.get("reference")):
        text = reference_text(reference)
        if text is not None:
            out["reference"] = text
    elif kind == "tool_call" and out.get("reference") is None:  # xLAM's `answers` column
        calls = tool_calls_from_value(reference)
        if calls is not None:
            out["reference"] = calls
    elif kind == "code" and out.get("tests") is None:
        given = tests if tests is not None else reference
        found, livecodebench = _read_tests(given)
        if found is not None:
            out["tests"] = found
            if "comparison" not in out and _packed_io(given, found):
                out["comparison"] = "apps"  # APPS/TACO's rows: as their testing_util compares
            if livecodebench and "comparison" not in out:
                out["comparison"] = "lcb"  # as LiveCodeBench's evaluator runs and compares
            if out.get("prefix") is None and (prefix := code_prefix(given)) is not None:
                out["prefix"] = prefix
    elif kind == "named":  # the server fills its registered grader from these
        text = reference_text(reference)
        if out.get("reference") is None and text is not None:
            out["reference"] = text
        found = tests_from_value(tests) if tests is not None else None
        if out.get("tests") is None and found is not None:
            out["tests"] = found
    elif kind == "instruction_following" and not (
        "instructions" in out or "instruction_id_list" in out
    ):
        out.update(instructions_from_value(reference))
    elif kind == "weighted":
        out["graders"] = [
            {**p, "grader": fill_grader(p["grader"], reference, tests)}
            if isinstance(p, Mapping) and isinstance(p.get("grader"), Mapping)
            else p
            for p in out.get("graders", [])
        ]
    elif kind == "length_penalty" and isinstance(out.get("grader"), Mapping):
        out["grader"] = fill_grader(out["grader"], reference, tests)
    elif kind == "multi" and isinstance(out.get("graders"), Mapping):  # OpenAI's multi
        out["graders"] = {
            n: fill_grader(g, reference, tests) if isinstance(g, Mapping) else g
            for n, g in out["graders"].items()
        }
    return out


OPEN_INSTRUCT_VERIFIERS: dict[str, dict[str, Any]] = {
    "gsm8k": {"type": "math"},
    "math": {"type": "math"},
    "strict_math": {"type": "math", "extract": "final_answer"},  # only Minerva's answer line
    "ifeval": {"type": "instruction_following"},
    "ifeval_old": {"type": "instruction_following"},
    # open-instruct's code verifier runs the last fenced block or, with none, the whole output
    "code": {"type": "code", "language": "python", "extract": "last_or_whole"},
    "code_stdio": {"type": "code", "language": "python", "extract": "last_or_whole"},
    "string_matcher": {"type": "answer_match", "metric": "em"},
    "string_f1": {"type": "answer_match", "metric": "f1", "extract": "after_thinking"},
    "flan": {"type": "answer_match", "extract": "none", "marker": "The answer is: "},
}
"""open-instruct's verifier names (a row's ``dataset`` column: Tülu 3's and OLMo's RLVR data)
that referee's graders cover, and the grader each becomes."""


def dataset_grader(dataset: Any, ground_truth: Any) -> dict[str, Any] | None:
    """The grader of an open-instruct row from its ``dataset`` column (a verifier's name, or a
    list of names with a list of ground truths beside it, one each, whose rewards open-instruct
    adds up), each with its ground truth filled in. None: the row names no verifier; a
    ValueError names a verifier referee does not cover."""
    listed = isinstance(dataset, list | tuple)
    names = list(dataset) if listed else [dataset]
    if not names or not all(isinstance(n, str) and n for n in names):
        return None
    truths = [ground_truth]
    if listed:
        truths = list(ground_truth) if isinstance(ground_truth, list | tuple) else [ground_truth]
        if len(truths) != len(names):
            raise ValueError(f"{len(names)} names in `dataset` but {len(truths)} ground truths")
    graders = []
    for name, truth in zip(names, truths, strict=True):
        known = OPEN_INSTRUCT_VERIFIERS.get(name.lower())
        if known is None:
            raise ValueError(
                f"dataset {name!r} names no verifier referee covers: pass grader=..., or use "
                f"one of {', '.join(OPEN_INSTRUCT_VERIFIERS)}"
            )
        graders.append(fill_grader(known, truth))
    if len(graders) == 1:
        return graders[0]
    parts = [{"weight": 1.0, "grader": g} for g in graders]
    return {"type": "weighted", "graders": parts, "normalize": False}  # open-instruct's sum
