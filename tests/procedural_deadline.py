"""``REFEREE_PROCEDURAL_TIMEOUT_S`` seen from the outside: items whose verdict says which
deadline they were scored under, for the test of each entry point (route, job, Celery worker,
CLI, ``length_penalty``'s inner batch).

With a math deadline of 0.5 ms and a procedural one of 1 ms, a procedural item's deadline is
1 ms when the setting is honoured: its check is stopped and its error says "within 0.001 s". An
entry point that ignores the setting falls back to the default of 20 s and scores the item 1.

This holds while the check workers are cold: a worker's first procedural check imports
reasoning-gym (about 2 s), and a stopped check takes its worker with it. A worker that has
already scored a procedural item may finish one in under a millisecond, so these items go to a
server, worker or pool of the test's own that has scored no procedural item in time.
"""

from __future__ import annotations

from typing import Any

ENV = {"REFEREE_MATH_TIMEOUT_S": "0.0005", "REFEREE_PROCEDURAL_TIMEOUT_S": "0.001"}
STOPPED = "within 0.001 s"


def items() -> list[dict[str, Any]]:
    """A procedural item ``plain``, and ``lp0``, ``lp1``: a ``length_penalty`` group over the
    same procedural grader (scored in the inner batch)."""
    from referee.verifiers import procedural

    (problem,) = procedural.generate("basic_arithmetic", {}, seed=3, n=1)
    grader = {"type": "procedural", "task": "basic_arithmetic", "entry": problem["entry"]}
    response = f"\\boxed{{{problem['answer']}}}"
    penalty = {"type": "length_penalty", "grader": grader, "beta": 0.5, "max_length": 100}
    return [
        {"id": "plain", "response": response, "grader": grader},
        *({"id": f"lp{k}", "response": response, "grader": penalty, "group": "g"} for k in (0, 1)),
    ]


def assert_honoured(rewards: list[Any]) -> None:
    """Every item of :func:`items` was stopped at the procedural deadline (``rewards``: the
    results, as models or as dicts)."""
    by_id = {_get(r, "id"): _get(r, "details") for r in rewards}
    assert set(by_id) == {"plain", "lp0", "lp1"}, by_id
    assert by_id["plain"]["outcome"] == "timeout", by_id["plain"]
    assert STOPPED in by_id["plain"]["error"], by_id["plain"]
    for name in ("lp0", "lp1"):
        inner = by_id[name]["inner"]
        assert inner["outcome"] == "timeout" and STOPPED in inner["error"], by_id[name]


def _get(result: Any, key: str) -> Any:
    return result[key] if isinstance(result, dict) else getattr(result, key)
