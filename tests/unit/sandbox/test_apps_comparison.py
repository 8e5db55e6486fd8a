"""``comparison: "apps"`` gives a stdin test APPS's own verdict.

APPS's ``testing_util`` (the copy veRL 0.9.1 ships in ``verl/utils/reward_score/prime_code``,
its default reward for the codecontests, apps, codeforces and taco data sources; loaded from
the pinned wheel: tests/prime_code_peer.py) compares a program's stdout with the expected output
leniently: the whole output or each line stripped, blank lines dropped, a number a line
compared with ``np.allclose``'s tolerances. For a corpus of expected outputs and the outputs a
program might print for them (spaces around lines and inside them, blank lines, CRLF, more or
fewer digits, an int for a float, a line missing or added, other case), each program is run by
``prime_code.compute_score`` as veRL calls it, and its verdict must be referee's
``outputs_match`` under ``apps``.
"""

from __future__ import annotations

import json

import pytest
from prime_code_peer import prime_code

from referee.sandbox.comparison import CompareMode, Comparison, outputs_match

EXPECTED = [
    "3",
    "YES",
    "0.333333",
    "2.5\n-1.25",
    "1 2 3",
    "1 2\n3 4",
    "hello world\nfoo",
    "10\n20\n30",
    "1e-09",
    "3.0",
    "",
]


def variants(expected: str) -> list[str]:
    lines = expected.split("\n")
    out = [
        expected + "\n",
        expected,
        expected + "\n\n\n",
        "\n".join(f"  {x}  " for x in lines) + "\n",
        "\n\n".join(lines) + "\n",
        "\r\n".join(lines) + "\r\n",
        expected.upper() + "\n",
        "\n".join(lines[:-1]) + "\n" if len(lines) > 1 else "\n",
        expected + "\nextra\n",
        expected.replace(" ", "  ") + "\n",
    ]
    numbers = []
    for line in lines:
        try:
            value = float(line)
        except ValueError:
            numbers = []
            break
        numbers.append(value)
    if numbers:
        out.append("\n".join(f"{v:.10f}" for v in numbers) + "\n")
        out.append("\n".join(f"{v * (1 + 3e-6):.12g}" for v in numbers) + "\n")
        out.append("\n".join(f"{v * (1 + 1e-3):.12g}" for v in numbers) + "\n")
        out.append("\n".join(str(int(v)) if v == int(v) else str(v) for v in numbers) + "\n")
    return out


@pytest.mark.slow
def test_stdin_verdicts_equal_apps_testing_util() -> None:
    peer = prime_code()
    cmp = Comparison(mode=CompareMode.APPS)
    total, wrong, passed = 0, [], 0
    for expected in EXPECTED:
        for printed in variants(expected):
            program = f"import sys\nsys.stdout.write({printed!r})\n"
            tests = json.dumps({"inputs": [""], "outputs": [expected]})
            theirs = peer.compute_score(f"```python\n{program}```", tests, continuous=True)[0]
            theirs = float(theirs) == 1.0
            ours = outputs_match(printed, expected, cmp)
            total += 1
            passed += theirs
            if ours != theirs:
                wrong.append((printed, expected, theirs, ours))
    assert not wrong, f"{len(wrong)} of {total} differ: {wrong[:10]}"
    assert 0.3 * total < passed < 0.9 * total  # both verdicts are common in the corpus


def test_apps_is_more_lenient_than_the_default() -> None:
    default, apps = Comparison(), Comparison(mode=CompareMode.APPS)
    for printed, expected in ((" 3\n", "3"), ("1\n\n2\n", "1\n2"), ("0.3333333\n", "0.333333")):
        assert outputs_match(printed, expected, apps)
        assert not outputs_match(printed, expected, default)
    assert not outputs_match("1  2\n", "1 2", apps)  # spaces inside a line still count
    assert not outputs_match("yes\n", "YES", apps)


def test_apps_rows_get_the_apps_comparison() -> None:
    """A row's APPS/TACO/CodeContests tests (``{"inputs", "outputs"}``) and a veRL row whose
    ``data_source`` is one prime_code grades compare as APPS does, unless the grader says."""
    from referee.client.grader_specs import fill_grader, fill_item

    packed = '{"inputs": ["1\\n"], "outputs": ["2\\n"]}'
    assert fill_grader({"type": "code"}, None, packed)["comparison"] == "apps"
    given = fill_grader({"type": "code", "comparison": "exact"}, None, packed)
    assert given["comparison"] == "exact"
    listed = {"type": "code", "tests": [{"stdin": "", "stdout": "1"}]}
    assert fill_item(listed, {"data_source": "taco"})["comparison"] == "apps"
    assert "comparison" not in fill_item(listed, {"data_source": "openai/gsm8k"})
    assert "comparison" not in fill_grader({"type": "code"}, None, '["assert f() == 1"]')
