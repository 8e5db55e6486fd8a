"""The grader registry: every kind of the wire schema is scored by the pool or resolved by a
named stage first, the pool's scoring imports nothing of services/, and the tree walker."""

from __future__ import annotations

import subprocess
import sys
import typing
from typing import Any

import pytest

from referee.client.models import Grader
from referee.verifiers.registry import ELSEWHERE, KINDS, item_deadline, score_item
from referee.verifiers.tree import has_type, iter_leaves, leaves, map_leaves, replace

# lowered or expanded before any stage sees them (services/scoring/openai.py, scoring/named.py)
BEFORE_STAGES = {"named", "multi", "score_model", "label_model"}


def _schema_kinds() -> set[str]:
    union = typing.get_args(Grader)[0]
    return {cls.model_fields["type"].default for cls in typing.get_args(union)}


def test_every_schema_kind_has_one_home() -> None:
    kinds = _schema_kinds()
    assert len(kinds) > 15
    homes = [set(KINDS), set(ELSEWHERE), BEFORE_STAGES]
    for kind in kinds:
        assert sum(kind in h for h in homes) == 1, kind
    # and nothing in the registry that the schema does not know (but the internal node)
    assert set(KINDS) - kinds == {"precomputed"}
    assert set(ELSEWHERE) <= kinds


@pytest.mark.parametrize("kind", sorted(ELSEWHERE))
def test_a_stage_kind_reaching_the_pool_names_its_stage(kind: str) -> None:
    with pytest.raises(ValueError, match="not on the check pool"):
        score_item({"type": kind}, "x")


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown grader type 'nope'"):
        score_item({"type": "nope"}, "x")


def test_pool_scoring_imports_nothing_of_services() -> None:
    code = (
        "import sys\n"
        "from referee.verifiers.registry import score_item\n"
        "g = {'type': 'weighted', 'graders': ["
        "{'weight': 1, 'grader': {'type': 'math', 'reference': '2'}},"
        "{'weight': 1, 'grader': {'type': 'string_check', 'reference': 'b'}},"
        "{'weight': 1, 'grader': {'type': 'tool_call', 'reference': []}}]}\n"
        "print(score_item(g, 'the answer is \\\\boxed{2}')[0])\n"
        "print(sorted(m for m in sys.modules if m.startswith('referee.services')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split("\n")
    assert 0.0 < float(out[0]) < 1.0
    assert out[1] == "[]"


WEIGHTED = {
    "type": "weighted",
    "graders": [
        {"weight": 1.0, "grader": {"type": "math", "reference": "1"}},
        {
            "weight": 2.0,
            "grader": {
                "type": "weighted",
                "graders": [{"weight": 1.0, "grader": {"type": "code", "tests": []}}],
            },
        },
        {
            "weight": 1.0,
            "grader": {"type": "length_penalty", "grader": {"type": "named", "name": "n"}},
        },
    ],
}


def test_tree_walks_weighted_parts_and_length_penalty_only_when_asked() -> None:
    assert [leaf["type"] for leaf in iter_leaves(WEIGHTED)] == ["math", "code", "length_penalty"]
    assert [leaf["type"] for leaf in iter_leaves(WEIGHTED, inner=True)] == [
        "math",
        "code",
        "named",
    ]
    assert has_type(WEIGHTED, {"code"}) and not has_type(WEIGHTED, {"named"})
    assert [p for p, _ in leaves(WEIGHTED, {"code", "math"})] == [(0,), (1, 0)]
    swapped = replace(WEIGHTED, (1, 0), {"type": "precomputed", "score": 1.0, "details": {}})
    assert swapped["graders"][1]["grader"]["graders"][0]["grader"]["type"] == "precomputed"
    assert WEIGHTED["graders"][1]["grader"]["graders"][0]["grader"]["type"] == "code"  # a copy


def test_map_leaves_says_where_each_leaf_is() -> None:
    seen: list[str] = []

    def visit(leaf: dict[str, typing.Any], where: str) -> dict[str, typing.Any]:
        seen.append(where)
        return leaf

    map_leaves(WEIGHTED, visit, inner=True, where="items.3.grader")
    assert seen == [
        "items.3.grader.graders.0.grader",
        "items.3.grader.graders.1.grader.graders.0.grader",
        "items.3.grader.graders.2.grader.grader",
    ]


def test_deadline_from_the_registry() -> None:
    two_math = {
        "type": "weighted",
        "graders": [{"weight": 1, "grader": {"type": "math", "reference": "1"}}] * 2,
    }
    assert item_deadline(two_math, 3.0) == 6.0
    assert item_deadline({"type": "sql", "timeout_s": 1.0}, 3.0) == 4.0
    assert item_deadline({"type": "procedural"}, 3.0, 9.0) == 9.0
    assert item_deadline({"type": "string_check"}, 3.0) == 3.0


@pytest.mark.parametrize("kind", sorted(set(KINDS) - {"weighted"}))
def test_a_leafs_deadline_is_the_one_of_a_weighted_around_it(kind: str) -> None:
    """A leaf's deadline is worked out without the walk a weighted grader takes: the same
    seconds either way, for every kind the pool scores."""
    leaf: dict[str, Any] = {"type": kind, "reference": "1", "timeout_s": 7.5}
    around = {"type": "weighted", "graders": [{"weight": 1, "grader": leaf}]}
    for timeout_s, procedural_s in [(3.0, None), (3.0, 0.5), (20.0, 30.0)]:
        assert item_deadline(leaf, timeout_s, procedural_s) == item_deadline(
            around, timeout_s, procedural_s
        )
