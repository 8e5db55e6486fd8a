"""Rows of ``prm_mc`` items for the job tests (the queue under kills and restarts, the compose
stack): a short solution whose steps are distinct per item, so that no two items share a
prefix (each item's rollouts are its own, not a cache hit of another's)."""

from __future__ import annotations

from typing import Any

SOLUTION = "Step 1: 2 + 3 = 5\nStep 2: 5 * 2 = 10\nStep 3: check {i}.\nStep 4: \\boxed{{10}}."


def prm_items(n: int, tag: str, rollouts: int = 8) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{tag}{i}",
            "prompt": "Compute (2 + 3) * 2.",
            "response": SOLUTION.format(i=f"{tag}{i}"),  # distinct: no shared prefixes
            "grader": {
                "type": "prm_mc",
                "reference": "10",
                "n_rollouts": rollouts,
                "max_tokens": 16,
            },
        }
        for i in range(n)
    ]
