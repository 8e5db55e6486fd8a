"""Finding the program in a model's response: a table of response shapes models produce."""

from __future__ import annotations

import pytest

from referee.sandbox import extract_code

PY = "print(1)\n"
CASES: list[tuple[str, str | None, str, str | None]] = [
    # (response, language, which, expected program)
    ("Here:\n```python\nprint(1)\n```\n", "python", "last", PY),
    ("```py\nprint(1)\n```", "python", "last", PY),
    ("```\nprint(1)\n```", "python", "last", PY),
    ("Draft:\n```python\nprint(0)\n```\nFinal:\n```python\nprint(1)\n```", "python", "last", PY),
    ("Draft:\n```python\nprint(1)\n```\nFinal:\n```python\nprint(2)\n```", "python", "first", PY),
    # a block in another language (the sample output) does not win over the program
    ("```python\nprint(1)\n```\nOutput:\n```text\n1\n```", "python", "last", PY),
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
    # tildes, indentation of up to three spaces, an info string with attributes
    ("~~~python\nprint(1)\n~~~", "python", "last", PY),
    ("```python title=sol.py\nprint(1)\n```", "python", "last", PY),
    # a fence cut off at the token limit is not a block
    ("```python\nprint(1)\n```\n```python\nprint(2", "python", "last", PY),
    ("```python\nprint(2", "python", "last", None),
    ("no code here", "python", "last", None),
    ("print(1)\n", "python", "none", PY),
    ("   ", "python", "none", None),
]


@pytest.mark.parametrize(("response", "language", "which", "expected"), CASES)
def test_extract_code(response: str, language: str, which: str, expected: str | None) -> None:
    assert extract_code(response, language, which) == expected  # type: ignore[arg-type]


def test_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError):
        extract_code("x", "python", "middle")  # type: ignore[arg-type]
