"""OpenAI's grader objects mapped onto referee's graders, before a batch is scored.

``score_batch`` calls :func:`lower` on every grader (as a plain dict) after the group graders
are resolved (their inner graders are lowered in their own batch) and before anything else, so
the rest of the path (judges on the judge backend, code and python on the sandbox, the rest on
the check pool) sees only graders it already knows:

- ``multi`` becomes a ``weighted`` node whose parts carry the graders' names and whose
  ``formula`` is ``calculate_output`` (evaluated by ``referee.verifiers.formula``, not eval);
- ``score_model`` becomes an implicit ``rubric`` judge whose one criterion is the grader's
  messages (templates filled), its 0-1 rating scaled to ``range`` by a formula node;
- ``label_model`` becomes an explicit ``rubric`` judge with one criterion: the label the
  messages ask for is one of ``passing_labels`` (1.0 when met, else 0.0);
- ``python`` stays as it is (it is referee's own grader too; see ``python_grading``).

Fields referee cannot honour (``model``, ``sampling_params``: the server's judge model and
settings are used) are kept on the node under ``openai`` and reported in the item's details.
"""

from __future__ import annotations

import json
import re
from typing import Any

from referee.verifiers.tree import has_type, map_leaves

__all__ = ["has_openai", "lower", "render_template"]

_OPENAI = frozenset({"multi", "score_model", "label_model"})
_TEMPLATE = re.compile(r"\{\{\s*(sample|item)\.([A-Za-z0-9_.\[\]-]+)\s*\}\}")
_CRITERION_CHARS = 2_000


def has_openai(grader: dict[str, Any]) -> bool:
    return has_type(grader, _OPENAI)


def _lookup(root: Any, path: str) -> Any:
    value = root
    for part in re.split(r"\.|\[(\d+)\]", path):
        if not part:
            continue
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def render_template(text: str, item: dict[str, Any], sample_text: str) -> str:
    """``{{item.x}}`` from the row, ``{{sample.output_text}}`` as the response's place (the
    judge is shown the response itself)."""

    def fill(m: re.Match[str]) -> str:
        namespace, path = m.group(1), m.group(2)
        if namespace == "sample":
            return sample_text
        value = _lookup(item, path)
        if value is None:
            return m.group(0)
        return value if isinstance(value, str) else json.dumps(value)

    return _TEMPLATE.sub(fill, text)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text", ""))
    if isinstance(content, list):
        return "\n".join(_content(c) for c in content)
    return ""


def _instructions(grader: dict[str, Any]) -> str:
    item = grader.get("item") or {}
    lines = []
    for message in grader["input"]:
        text = render_template(_content(message.get("content")), item, "(the response)")
        lines.append(f"{message.get('role', 'user')}: {text}")
    return "\n".join(lines)


def _cut(text: str) -> str:
    return text if len(text) <= _CRITERION_CHARS else text[: _CRITERION_CHARS - 3] + "..."


def _openai_fields(grader: dict[str, Any]) -> dict[str, Any]:
    keep = ("name", "model", "sampling_params", "pass_threshold")
    return {k: grader[k] for k in keep if grader.get(k) is not None}


def lower(grader: dict[str, Any]) -> dict[str, Any]:
    """``grader`` with every OpenAI object in it replaced by referee's equivalent."""
    return map_leaves(grader, lambda leaf, _: _lower_leaf(leaf))


def _lower_leaf(grader: dict[str, Any]) -> dict[str, Any]:
    kind = grader["type"]
    if kind == "multi":
        return {
            "type": "weighted",
            "of": "multi",
            "normalize": False,
            "formula": grader["calculate_output"],
            "openai": _openai_fields(grader),
            "graders": [
                {"weight": 1.0, "name": name, "grader": lower(inner)}
                for name, inner in grader["graders"].items()
            ],
        }
    if kind == "score_model":
        low, high = grader.get("range") or [0.0, 1.0]
        rubric = {
            "type": "rubric",
            "mode": "implicit",
            "criteria": [{"text": _cut(_instructions(grader)), "weight": 1.0}],
            "reference": None,
            "structured_verdict": False,
        }
        return {
            "type": "weighted",
            "of": "score_model",
            "normalize": False,
            "formula": f"{float(low)!r} + ({float(high) - float(low)!r}) * rating",
            "openai": _openai_fields(grader),
            "graders": [{"weight": 1.0, "name": "rating", "grader": rubric}],
        }
    if kind == "label_model":
        labels = ", ".join(grader["labels"])
        passing = ", ".join(grader["passing_labels"])
        text = (
            f"Following these grading instructions, the label the response earns (one of: "
            f"{labels}) is one of the passing labels: {passing}.\n{_instructions(grader)}"
        )
        return {
            "type": "weighted",
            "of": "label_model",
            "normalize": False,
            "formula": "passing",
            "openai": _openai_fields(grader),
            "graders": [
                {
                    "weight": 1.0,
                    "name": "passing",
                    "grader": {
                        "type": "rubric",
                        "mode": "explicit",
                        "criteria": [{"text": _cut(text), "weight": 1.0}],
                        "reference": None,
                        "structured_verdict": False,
                    },
                }
            ],
        }
    return grader
