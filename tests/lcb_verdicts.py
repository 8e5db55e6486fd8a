"""Record LiveCodeBench's own stdin-test verdicts for tests/unit/sandbox/test_lcb_comparison.py.

LiveCodeBench's evaluator (``lcb_runner/evaluation/testing_util.py``: ``grade_stdio``, what its
leaderboard and the code RL recipes built on it score with) is not on PyPI, so its verdicts are
recorded here from a checkout and committed (tests/data/lcb_stdio_verdicts.jsonl; the header
names the commit). To record them again:

    git clone https://github.com/LiveCodeBench/LiveCodeBench /tmp/LiveCodeBench
    python tests/lcb_verdicts.py /tmp/LiveCodeBench [COMMIT]

(COMMIT: for an exported tree without ``.git``.) ``testing_util.py`` is loaded by path (it
imports numpy, which the venv has; not the package's ``__init__``). For each expected output and
each way a program might print it, a program that writes exactly that is graded by
``grade_stdio`` with the expected output as its one test, in a child process per expected
output (the evaluator sets alarms and swaps ``sys.stdout``).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "data" / "lcb_stdio_verdicts.jsonl"

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
    "100",
    "-0",
    "1\n\n2",
    "",
]


def variants(expected: str) -> list[str]:
    """Ways a program might print ``expected``: as it is, spaced, blank lines, CRLF, case,
    a line missing or added, numbers with more or fewer digits, in other notations."""
    lines = expected.split("\n")
    out = [
        expected + "\n",
        expected,
        "\n\n" + expected + "\n\n\n",
        "\n".join(f"  {x}  " for x in lines) + "\n",
        "\n\n".join(lines) + "\n",
        "\r\n".join(lines) + "\r\n",
        expected.upper() + "\n",
        "\n".join(lines[:-1]) + "\n" if len(lines) > 1 else "\n",
        expected + "\nextra\n",
        expected.replace(" ", "  ") + "\n",
        expected.replace(" ", "\t") + "\n",
    ]
    numbers: list[list[float]] = []
    for line in lines:
        try:
            numbers.append([float(t) for t in line.split()])
        except ValueError:
            return out
    out.append("\n".join(" ".join(f"{v:.10f}" for v in row) for row in numbers) + "\n")
    out.append("\n".join(" ".join(f"{v * (1 + 3e-9):.12g}" for v in row) for row in numbers) + "\n")
    out.append("\n".join(" ".join(f"{v:e}" for v in row) for row in numbers) + "\n")
    out.append(
        "\n".join(" ".join(str(int(v)) if v == int(v) else str(v) for v in row) for row in numbers)
        + "\n"
    )
    out.append(
        "\n".join(" ".join(f"{v}0" if "." in str(v) else str(v) for v in row) for row in numbers)
        + "\n"
    )
    return out


def _grade(testing_util: Path, expected: str) -> list[bool]:
    """In this (child) process: each variant's verdict by ``grade_stdio``."""
    spec = importlib.util.spec_from_file_location("lcb_testing_util", testing_util)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    verdicts = []
    for printed in variants(expected):
        program = f"import sys\nsys.stdout.write({printed!r})\n"
        results, _ = module.grade_stdio(program, [""], [expected], timeout=5)
        verdicts.append(results == [True])
    return verdicts


def main() -> None:
    if sys.argv[1] == "--child":
        print(json.dumps(_grade(Path(sys.argv[2]), json.loads(sys.argv[3]))))
        return
    checkout = Path(sys.argv[1])
    found = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    commit = found.stdout.strip() if found.returncode == 0 else sys.argv[2]
    testing_util = checkout / "lcb_runner" / "evaluation" / "testing_util.py"
    rows: list[dict[str, Any]] = []
    for expected in EXPECTED:
        child = subprocess.run(
            [sys.executable, __file__, "--child", str(testing_util), json.dumps(expected)],
            capture_output=True,
            text=True,
            check=True,
        )
        verdicts = json.loads(child.stdout.strip().splitlines()[-1])
        for printed, passed in zip(variants(expected), verdicts, strict=True):
            rows.append({"expected": expected, "printed": printed, "passed": passed})
    with OUT.open("w") as fh:
        fh.write(json.dumps({"livecodebench_commit": commit, "rows": len(rows)}) + "\n")
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    print(f"{len(rows)} rows from LiveCodeBench {commit} -> {OUT}")


if __name__ == "__main__":
    main()
