"""Structured output: does the response hold a JSON value that validates against a JSON Schema?

The reward of "answer in this JSON shape" tasks (function arguments, extraction into a record,
JSON mode). The value is read from the response's last fenced block (```json or any fence that
parses), else the whole response, else the first JSON object or array embedded in the text
(``extract="auto"``); ``extract="none"`` takes the whole response only. Validation is the
``jsonschema`` library's own, with the draft the schema names in ``$schema`` (2020-12 when it
names none) and no ``format`` assertions (as the specification's default).

A response is hostile input: its JSON may nest past the parser's recursion limit (no JSON, not a
crash), and a schema's ``pattern`` may backtrack on it (the check pool's deadline stops it). A
schema that is not a valid schema is the grader's fault: no score, ``valid: false``.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from referee.verifiers.fences import fenced_blocks

__all__ = ["SchemaCheck", "check_json_schema"]

_MAX_ERRORS = 5
_SCAN_TRIES = 200  # embedded values tried at most
_SCAN_BUDGET = 1_000_000  # characters read by failed tries at most


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    score: float | None
    outcome: str
    """``correct`` (the value validates), ``wrong`` (it breaks the schema), ``no_answer`` (no
    JSON value) or ``grader_error`` (the schema is not one: the grader's fault)."""
    source: str | None = None
    """Where the value was read: ``fence``, ``response`` or ``embedded``."""
    errors: list[dict[str, str]] = field(default_factory=list)
    """The first validation errors: ``path`` (a JSON pointer) and ``message``."""
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("score")
        if self.outcome == "grader_error":
            data["valid"] = False
        return {k: v for k, v in data.items() if v not in (None, [])}


_MISSING = object()


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _MISSING


def _embedded(text: str) -> Any:
    decoder = json.JSONDecoder()
    tries, budget = 0, _SCAN_BUDGET
    for m in re.finditer(r"[\[{]", text):
        tries += 1
        if tries > _SCAN_TRIES or budget <= 0:
            break
        try:
            value, _end = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError as exc:
            budget -= max(1, exc.pos - m.start())
            continue
        except RecursionError:
            continue
        return value
    return _MISSING


def read_json(response: str, extract: str = "auto") -> tuple[Any, str | None]:
    """The JSON value of a response and where it was found (``_MISSING``, None: none)."""
    if extract == "none":
        value = _loads(response.strip())
        return value, (None if value is _MISSING else "response")
    for _lang, body in reversed(fenced_blocks(response)):
        value = _loads(body)
        if value is not _MISSING:
            return value, "fence"
    value = _loads(response.strip())
    if value is not _MISSING:
        return value, "response"
    value = _embedded(response)
    return value, (None if value is _MISSING else "embedded")


def _pointer(path: Any) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def check_json_schema(
    response: str, schema: dict[str, Any] | bool, extract: str = "auto"
) -> SchemaCheck:
    import jsonschema
    from jsonschema.exceptions import SchemaError
    from referencing.exceptions import Unresolvable

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        validator = cls(schema)
    except SchemaError as exc:
        return SchemaCheck(None, "grader_error", reason=f"the schema is not valid: {exc.message}")
    value, source = read_json(response, extract)
    if value is _MISSING:
        where = "the response" if extract == "none" else "a fence, the response or its text"
        return SchemaCheck(0.0, "no_answer", reason=f"no JSON value in {where}")
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    except RecursionError:
        return SchemaCheck(0.0, "wrong", source, reason="the value nests too deep to check")
    except Unresolvable as exc:  # a $ref to nothing the schema holds (nothing is fetched)
        return SchemaCheck(None, "grader_error", source, reason=f"the schema's $ref: {exc}")
    if not errors:
        return SchemaCheck(1.0, "correct", source)
    shown = [
        {"path": _pointer(e.absolute_path), "message": e.message[:300]}
        for e in errors[:_MAX_ERRORS]
    ]
    reason = f"{len(errors)} validation error{'s' if len(errors) > 1 else ''}"
    return SchemaCheck(0.0, "wrong", source, shown, reason)
