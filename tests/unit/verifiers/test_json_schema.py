"""The json_schema grader against the JSON-Schema-Test-Suite as the jsonschema project ships it
(its sdist's ``json/tests``, pinned), and on model-shaped and hostile responses."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from pinned_download import pinned_file

from referee.client.models import RewardItem
from referee.verifiers.json_schema import check_json_schema
from referee.verifiers.registry import score_item

VERSION = "4.25.1"
SDIST = f"jsonschema-{VERSION}.tar.gz"
SHA256 = "e4a9655ce0da0c0b67a085847e00a3a51449e1157f4f75e9fb5aa545e122eb85"
# refRemote needs the suite's own HTTP server of remote schemas: referee fetches nothing
LEFT_OUT = {"refRemote.json"}
DRAFTS = ("draft2020-12", "draft7")
# the one case jsonschema's own suite runner skips ("Vocabulary support is still in-progress",
# jsonschema/tests/test_jsonschema_test_suite.py): the library's gap, not referee's
LIBRARY_SKIPS = {"no validation: invalid number, but it still validates"}


def _needs_remotes(schema: Any) -> bool:
    """A schema whose relative ``$ref`` names a document of the suite's remotes server
    (``http://localhost:1234/...``, served by the suite's own runner)."""
    text = json.dumps(schema)
    return "localhost:1234" in text and any(
        isinstance(ref, str) and not ref.startswith("#") for ref in _refs(schema)
    )


def _refs(node: Any) -> list[Any]:
    if isinstance(node, dict):
        own = [v for k, v in node.items() if k in ("$ref", "$dynamicRef")]
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _suite() -> list[tuple[str, Any, Any, bool]]:
    sdist = pinned_file("jsonschema", VERSION, SDIST, SHA256, sdist=True)
    cases = []
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) != 5 or parts[1:3] != ("json", "tests") or parts[3] not in DRAFTS:
                continue  # required tests only (optional/ holds format and bignum extras)
            if not member.name.endswith(".json") or parts[4] in LEFT_OUT:
                continue
            handle = tar.extractfile(member)
            assert handle is not None
            for group in json.load(handle):
                schema = group["schema"]
                if _needs_remotes(schema):
                    continue
                if parts[3] == "draft7" and isinstance(schema, dict):
                    schema = {"$schema": "http://json-schema.org/draft-07/schema#", **schema}
                for test in group["tests"]:
                    if parts[4] == "vocabulary.json" and test["description"] in LIBRARY_SKIPS:
                        continue
                    name = f"{parts[3]}/{parts[4]}: {group['description']}: {test['description']}"
                    cases.append((name, schema, test["data"], test["valid"]))
    return cases


@pytest.mark.slow  # about 1 s: the JSON Schema test suite
def test_the_published_suite() -> None:
    cases = _suite()
    assert len(cases) > 2000
    wrong = []
    for name, schema, data, valid in cases:
        got = check_json_schema(json.dumps(data), schema, extract="none")
        if got.score != (1.0 if valid else 0.0):
            wrong.append(f"{name}: {got.outcome} {got.errors[:1]}")
    assert wrong == []


SCHEMA = {
    "type": "object",
    "required": ["city", "population"],
    "properties": {"city": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("response", "score", "source"),
    [
        ('```json\n{"city": "Oslo", "population": 709000}\n```', 1.0, "fence"),
        (
            'Sure!\n```\n{"city": 1}\n```\nthen\n```json\n{"city": "Oslo", "population": 1}\n```',
            1.0,
            "fence",
        ),
        ('{"city": "Oslo", "population": 709000}', 1.0, "response"),
        ('The answer is {"city": "Oslo", "population": 709000}.', 1.0, "embedded"),
        ('{"city": "Oslo", "population": -5}', 0.0, "response"),
        ('{"city": "Oslo", "population": 5, "extra": true}', 0.0, "response"),
        ("no json here", 0.0, None),
        ("[" * 100_000 + "]" * 100_000, 0.0, None),  # past the parser's recursion limit
        ("{" * 50_000, 0.0, None),  # unclosed, read in bounded time
    ],
)
def test_responses(response: str, score: float, source: str | None) -> None:
    got = check_json_schema(response, SCHEMA)
    assert (got.score, got.source) == (score, source)
    if score == 0.0 and source is not None:
        assert got.outcome == "wrong" and got.errors and got.errors[0]["path"].startswith("/")


def test_extract_none_takes_the_whole_response() -> None:
    fenced = '```json\n{"city": "Oslo", "population": 1}\n```'
    assert check_json_schema(fenced, SCHEMA, extract="none").outcome == "no_answer"


def test_a_bad_schema_is_the_graders_fault() -> None:
    got = check_json_schema("{}", {"type": "nope"})
    assert got.score is None and got.to_dict()["valid"] is False
    unresolvable = check_json_schema("{}", {"$ref": "https://example.com/elsewhere.json"})
    assert unresolvable.outcome == "grader_error"


def test_through_the_wire_schema_and_registry() -> None:
    item = RewardItem.model_validate(
        {
            "id": "a",
            "response": '{"city": "Oslo", "population": 3}',
            "grader": {"type": "json_schema", "schema": SCHEMA},
        }
    )
    assert score_item(item.grader.model_dump(exclude_none=True), item.response)[0] == 1.0
    with pytest.raises(ValueError, match="over 200000 bytes"):
        RewardItem.model_validate(
            {
                "id": "b",
                "response": "{}",
                "grader": {"type": "json_schema", "schema": {"enum": ["x" * 300_000]}},
            }
        )
