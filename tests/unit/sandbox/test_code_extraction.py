"""Finding the program in a model's response: a table of response shapes models produce."""

from __future__ import annotations

import random
import re

import pytest

from referee.sandbox import extract_code
from referee.sandbox.code_extraction import CodeBlock, find_code_blocks

PY = "print(1)\n"
# responses whose program, their last python block, is PY
LAST_IS_PY = [
    "Here:\n```python\nprint(1)\n```\n",
    "```py\nprint(1)\n```",
    "```\nprint(1)\n```",
    "Draft:\n```python\nprint(0)\n```\nFinal:\n```python\nprint(1)\n```",
    # a block in another language (the sample output) does not win over the program
    "```python\nprint(1)\n```\nOutput:\n```text\n1\n```",
    # tildes, indentation of up to three spaces, an info string with attributes
    "~~~python\nprint(1)\n~~~",
    "```python title=sol.py\nprint(1)\n```",
    # a fence cut off at the token limit is not a block
    "```python\nprint(1)\n```\n```python\nprint(2",
]
CASES: list[tuple[str, str | None, str, str | None]] = [
    # (response, language, which, expected program)
    *((response, "python", "last", PY) for response in LAST_IS_PY),
    ("Draft:\n```python\nprint(1)\n```\nFinal:\n```python\nprint(2)\n```", "python", "first", PY),
    (
        "```cpp\nint main(){}\n```\n```c++\nint main(){return 0;}\n```",
        "cpp",
        "last",
        "int main(){return 0;}\n",
    ),
    # drafts inside the reasoning lose to the block after </think>
    (
        "<think>\n```python\nprint(0)\n```\n</think>\n```python\nprint(1)\n```",
        "python",
        "first",
        PY,
    ),
    # a cut-off fence and nothing before it: no program
    ("```python\nprint(2", "python", "last", None),
    ("no code here", "python", "last", None),
    ("print(1)\n", "python", "none", PY),
    ("   ", "python", "none", None),
    # last_or_whole: the last block, or a bare program (after the reasoning) when there is none
    *((response, "python", "last_or_whole", PY) for response in LAST_IS_PY),
    (PY, "python", "last_or_whole", PY),
    ("<think>\nI print one.\n</think>" + PY, "python", "last_or_whole", PY),
    ("<think>\n```python\nprint(0)\n```\n</think>\n" + PY, "python", "last_or_whole", "\n" + PY),
    ("<think>x</think>\n  ", "python", "last_or_whole", None),
]


@pytest.mark.parametrize(("response", "language", "which", "expected"), CASES)
def test_extract_code(response: str, language: str, which: str, expected: str | None) -> None:
    assert extract_code(response, language, which) == expected  # type: ignore[arg-type]


def test_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError):
        extract_code("x", "python", "middle")  # type: ignore[arg-type]


# The pattern the blocks were found with before: the reading to keep. Its lazy body re-scans the
# rest of the text from every opening fence that never closes (20,000 unclosed fences: ~23 s).
_BACKTRACKING = re.compile(
    r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n"
    r"(?P<body>.*?)"
    r"^(?P=indent)?(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def _by_pattern(text: str) -> list[CodeBlock]:
    blocks = []
    for match in _BACKTRACKING.finditer(text):
        info = match.group("info").strip().split()
        tag = info[0].lower().lstrip("{.").rstrip("}") if info else ""
        blocks.append(CodeBlock(tag, match.group("body")))
    return blocks


def test_blocks_as_the_backtracking_pattern_reads_them() -> None:
    """Random texts made of fence characters, indents, tags and line ends: the linear reading
    finds exactly the blocks the old pattern found (unclosed fences, shorter closings, tilde
    fences read as shorter ones, indented closings, carriage returns, a last line with no end)."""
    rng = random.Random(7)
    pieces = [
        "```",
        "````",
        "~~~",
        "~~~~",
        "`",
        "~",
        " ",
        "  ",
        "\t",
        "\n",
        "\n",
        "\n",
        "py",
        "x",
        "\r",
        "{.c}",
    ]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 24)))
        assert find_code_blocks(text) == _by_pattern(text), repr(text)


def test_hostile_fences_are_read_in_one_pass() -> None:
    """What took the old pattern tens of seconds (openings that never close) is no block; long
    runs of fences give the blocks the pattern gives them."""
    assert find_code_blocks("```x\n" * 20000) == []
    assert find_code_blocks("```x\n" * 20000 + "```\n") == [CodeBlock("x", "```x\n" * 19999)]
    tildes = "~~~~\n" * 10000 + "~~~\n"
    assert find_code_blocks(tildes) == _by_pattern(tildes) == [CodeBlock("", "")] * 5000
    nested = "```python\n" + "```py\n" * 20000 + "```\n"
    assert find_code_blocks(nested) == [CodeBlock("python", "```py\n" * 20000)]
