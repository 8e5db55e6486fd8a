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
import json
import sys
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import tomli_w
import yaml
from nemo_gym.server_utils import ServerClient
from nemo_gym_servers import call, load_app, response, said, score_both, server_folder

HERE = server_folder("structured_outputs")
so = load_app("structured_outputs")

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
                outputs = [(case, [call(tool, arguments)])]
                if case == "valid":
                    outputs += [
                        ("another tool", [call(tool + "_other", arguments)]),
                        ("two calls", [call(tool, arguments), call(tool, arguments, 1)]),
                        ("no call", [said(json.dumps(arguments))]),
                        ("arguments not JSON", [call(tool, "{nope")]),
                        ("words and the call", [said("Here."), call(tool, arguments)]),
                    ]
                    if key:
                        outputs.append(("no payload key", [call(tool, {"other": value})]))
            else:
                text = _text(kind, value)
                outputs = [(case, [said(text)])]
                if case == "valid":
                    outputs += [
                        ("fenced", [said(f"```{kind}\n{text}\n```")]),
                        ("padded", [said(f"\n  {text}\n")]),
                        (
                            "two parts",
                            [said(text[: len(text) // 2]), said(text[len(text) // 2 :])],
                        ),
                        ("words", [said("I cannot answer that.")]),
                        ("nothing", []),
                    ]
            for label, output in outputs:
                out.append((f"{name} ({kind}) {label}", {**row, "response": response(output)}))
    return out


async def main(url: str, path: str) -> None:
    config = so.StructuredOutputsResourcesServerConfig(
        host="127.0.0.1", port=0, entrypoint="", name="structured_outputs"
    )
    server = so.StructuredOutputsResourcesServer(
        config=config, server_client=MagicMock(spec=ServerClient)
    )
    results = await score_both(url, server, so.StructuredOutputsVerifyRequest, cases())
    Path(path).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
