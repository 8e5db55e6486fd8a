"""Fenced blocks of a response, read in one pass."""

from __future__ import annotations

import pytest

from referee.verifiers.fences import fenced_blocks


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("```sql\nSELECT 1\n```", [("sql", "SELECT 1\n")]),
        ("a\n```\nx\n```\nb\n```JSON\n{}\n```\n", [("", "x\n"), ("json", "{}\n")]),
        ("````\n```\ninner\n````\n", [("", "```\ninner\n")]),  # a longer fence holds a shorter
        ("~~~py\nx\n~~~\n", [("py", "x\n")]),
        ("   ```\nx\n```", [("", "x\n")]),  # up to three spaces of indent
        ("    ```\nx\n```", []),  # four: not a fence
        ("```\nunclosed\n", []),
        ("```{.python}\nx\n```", [("python", "x\n")]),
        ("``` a ``` b\nx\n```", []),  # a backtick in the info string: not a fence
        ("```\r\nx\r\n```\r\n", [("", "x\r\n")]),
    ],
)
def test_blocks(text: str, blocks: list[tuple[str, str]]) -> None:
    assert fenced_blocks(text) == blocks


def test_hostile_fences_are_linear() -> None:
    assert fenced_blocks("```x\n" * 100_000) == []
    assert len(fenced_blocks("```\n" * 100_000)) == 50_000
