"""Run inside NeMo Gym 0.7.0's environment (nemo_gym_peer.nemo_gym_python): NeMo Gym's own
structured_outputs resources server (``resources_servers/structured_outputs/app.py`` of the
installed wheel, built by its own classes) and referee's ``/nemo-gym/{env}/verify`` score the
same rows and responses.

The rows are the wheel's own examples (``data/*.jsonl``: JSON schemas answered as JSON, YAML or
TOML text or as a tool call's arguments) of the types referee grades (json, yaml, toml). For each
schema a value that validates is built from it, and the responses are that value and its
breakages: a property left out or added, a value of another type, a date that is not one (an
annotation there: no format checker), the JSON in a fence, words; in tool-call mode, the
call's name, count, arguments and payload key.
Every request is validated by structured_outputs' own request model. argv: referee's url, the
output path (a JSON list of ``[case, structured_outputs' reward, referee's status, referee's
reward]``).
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import httpx
import resources_servers
import tomli_w
import yaml
from nemo_gym.server_utils import ServerClient

HERE = Path(next(iter(resources_servers.__path__))) / "structured_outputs"  # namespace package
spec = importlib.util.spec_from_file_location("structured_outputs_app", HERE / "app.py")
assert spec and spec.loader
so = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = so
spec.loader.exec_module(so)

FORMATS = {"date": "2020-01-02", "date-time": "2020-01-02T03:04:05Z", "email": "a@b.co"}


def instance(schema: Any) -> Any:
    """A value that validates against ``schema`` (the shapes the examples use)."""
    if not isinstance(schema, dict):
        return None
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance(schema[key][0])
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {k: instance(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [instance(schema.get("items", {}))] * max(1, schema.get("minItems", 1))
    if kind == "string":
        return FORMATS.get(schema.get("format", ""), "text")
    return {"integer": 3, "number": 2.5, "boolean": True, "null": None}[kind]


def breakages(schema: dict[str, Any], good: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [("valid", good)]
    target, props = good, schema
    if isinstance(good, list) and good:
        target, props = good[0], schema.get("items", {})
    if isinstance(target, dict) and target:
        first = next(iter(target))
        for case, change in [
            ("a property left out", lambda d: d.pop(first)),
            ("a property added", lambda d: d.__setitem__("extra_field", 1)),
            ("another type", lambda d: d.__setitem__(first, {"not": "it"})),
        ]:
            broken = copy.deepcopy(good)
            change(broken[0] if isinstance(broken, list) else broken)
            out.append((case, broken))
        dated = [k for k, v in props.get("properties", {}).items() if v.get("format") == "date"]
        if dated:
            broken = copy.deepcopy(good)
            (broken[0] if isinstance(broken, list) else broken)[dated[0]] = "01/02/2020"
            out.append(("not a date", broken))
    return out


def _response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp", "created_at": 0.0, "model": "policy", "object": "response",
        "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }  # fmt: skip


def _said(text: str) -> dict[str, Any]:
    return {
        "id": "msg", "type": "message", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }  # fmt: skip


def _call(name: str, arguments: Any, k: int = 0) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "call_id": f"c{k}", "name": name, "arguments": text}


def _text(kind: str, value: Any) -> str:
    if kind == "yaml":
        return yaml.safe_dump(value, sort_keys=False)
    if kind == "toml":
        return tomli_w.dumps(value) if isinstance(value, dict) else "= nope"
    return json.dumps(value, indent=1)


def cases() -> list[tuple[str, dict[str, Any]]]:
    rows = []
    for path in sorted((HERE / "data").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if "schema_str" in row and str(row.get("schema_type", "json")).lower() in (
                "json", "yaml", "toml",
            ):  # fmt: skip
                rows.append((f"{path.stem}:{len(rows)}", row))
    out = []
    for name, row in rows:
        schema = json.loads(row["schema_str"])
        kind = str(row.get("schema_type", "json")).lower()
        tool_mode = row.get("response_mode") == "tool_call"
        for case, value in breakages(schema, instance(schema)):
            if tool_mode:
                key, tool = row.get("tool_payload_key"), row.get("tool_name") or "emit"
                arguments = {key: value} if key else value
                outputs = [(case, [_call(tool, arguments)])]
                if case == "valid":
                    outputs += [
                        ("another tool", [_call(tool + "_other", arguments)]),
                        ("two calls", [_call(tool, arguments), _call(tool, arguments, 1)]),
                        ("no call", [_said(json.dumps(arguments))]),
                        ("arguments not JSON", [_call(tool, "{nope")]),
                        ("words and the call", [_said("Here."), _call(tool, arguments)]),
                    ]
                    if key:
                        outputs.append(("no payload key", [_call(tool, {"other": value})]))
            else:
                text = _text(kind, value)
                outputs = [(case, [_said(text)])]
                if case == "valid":
                    outputs += [
                        ("fenced", [_said(f"```{kind}\n{text}\n```")]),
                        ("padded", [_said(f"\n  {text}\n")]),
                        (
                            "two parts",
                            [_said(text[: len(text) // 2]), _said(text[len(text) // 2 :])],
                        ),
                        ("words", [_said("I cannot answer that.")]),
                        ("nothing", []),
                    ]
            for label, output in outputs:
                out.append((f"{name} ({kind}) {label}", {**row, "response": _response(output)}))
    return out


async def main(url: str, path: str) -> None:
    config = so.StructuredOutputsResourcesServerConfig(
        host="127.0.0.1", port=0, entrypoint="", name="structured_outputs"
    )
    server = so.StructuredOutputsResourcesServer(
        config=config, server_client=MagicMock(spec=ServerClient)
    )
    results = []
    with httpx.Client(base_url=f"{url}/nemo-gym/python", timeout=120) as client:
        for case, body in cases():
            request = so.StructuredOutputsVerifyRequest.model_validate(body)
            theirs = (await server.verify(request)).reward
            r = client.post("/verify", json=request.model_dump(mode="json"))
            ours = r.json().get("reward") if r.status_code == 200 else r.text
            results.append([case, theirs, r.status_code, ours])
    Path(path).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
